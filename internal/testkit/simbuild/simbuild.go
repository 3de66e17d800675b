package simbuild

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// The modules, by file name.
const (
	// Skirmish is sim/games/skirmish/module: skirmish version 1, from the Go source.
	Skirmish = "skirmish.wasm"
	// HashChainGo is sim/games/hashchain/module: hashchain version 1, from the Go source.
	HashChainGo = "hashchain-go.wasm"
	// HashChainAS is sim/games/hashchain/as: hashchain version 1, in AssemblyScript.
	HashChainAS = "hashchain-as.wasm"
	// HashChainRust is sim/games/hashchain/rust: hashchain version 1, in Rust (rustc, no crates).
	HashChainRust = "hashchain-rust.wasm"
	// HashChainC is sim/games/hashchain/c: hashchain version 1, in C (clang and lld, no libc).
	HashChainC = "hashchain-c.wasm"
)

// asDir is the AssemblyScript project, relative to the repository root; its
// package.json's "build" script writes asOutput.
const (
	asDir    = "sim/games/hashchain/as"
	asOutput = "build/hashchain.wasm"
)

// builders build each module into dst from the repository at root.
var builders = map[string]func(root, dst string) error{
	Skirmish:    goModule("./sim/games/skirmish/module"),
	HashChainGo: goModule("./sim/games/hashchain/module"),
	HashChainAS: func(root, dst string) error { return buildAS(filepath.Join(root, asDir), dst) },
	HashChainRust: func(root, dst string) error {
		return buildRust(filepath.Join(root, "sim/games/hashchain/rust/hashchain.rs"), dst)
	},
	HashChainC: func(root, dst string) error {
		return buildC(filepath.Join(root, "sim/games/hashchain/c/hashchain.c"), dst)
	},
}

// goModule builds the Go main package pkg as a WASI reactor.
func goModule(pkg string) func(root, dst string) error {
	return func(root, dst string) error {
		return crossarch.Build(dst, filepath.Join(root, pkg), "wasip1", "wasm", "-buildmode=c-shared", "-ldflags=-s -w")
	}
}

// Names lists every module, Go ones first.
var Names = []string{Skirmish, HashChainGo, HashChainAS, HashChainRust, HashChainC}

// The toolchains beyond Go and npm, and how to install them (Debian).
const (
	installRust = "Debian: apt-get install rustc libstd-rust-dev-wasm32"
	installC    = "Debian: apt-get install clang lld"
)

// rustc returns a rustc that has the wasm32-unknown-unknown target ($RUSTC, the one on
// PATH, Debian's), or an error saying how to get one.
func rustc() (string, error) {
	for _, c := range []string{os.Getenv("RUSTC"), "rustc", "/usr/bin/rustc"} {
		if c == "" {
			continue
		}
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		root, err := exec.Command(path, "--print", "sysroot").Output()
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(root)), "lib", "rustlib", "wasm32-unknown-unknown")); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: no rustc with the wasm32-unknown-unknown target (%s)", ErrToolchain, installRust)
}

// clang returns clang, after checking that lld's wasm-ld is there too.
func clang() (string, error) {
	path, err := exec.LookPath("clang")
	if err == nil {
		_, err = exec.LookPath("wasm-ld")
	}
	if err != nil {
		return "", fmt.Errorf("%w: no clang and wasm-ld (%s)", ErrToolchain, installC)
	}
	return path, nil
}

// buildRust compiles the Rust source into dst.
func buildRust(src, dst string) error {
	rc, err := rustc()
	if err != nil {
		return err
	}
	return run(exec.Command(rc, append(slices.Clone(rustFlags), "-o", dst, src)...))
}

// rustFlags build a no_std Rust module (docs/wasm-sims.md, "Writing one in Rust").
var rustFlags = []string{"--edition", "2021", "--target", "wasm32-unknown-unknown", "--crate-type", "cdylib",
	"-C", "opt-level=3", "-C", "panic=abort", "-C", "strip=symbols"}

// buildC compiles the C source into dst.
func buildC(src, dst string) error {
	cc, err := clang()
	if err != nil {
		return err
	}
	return run(exec.Command(cc, append(slices.Clone(cFlags), "-o", dst, src)...))
}

// cFlags build a freestanding C module (docs/wasm-sims.md, "Writing one in C").
var cFlags = []string{"--target=wasm32", "-O2", "-nostdlib", "-Wall", "-Wextra", "-Werror", "-Wl,--no-entry"}

// C builds the C source src into dir/file with the flags of the repository's C module
// (and extra, say -DNAME=VALUE), for a test that needs a module of its own: skips the
// test without clang (fails it under TICKRELAY_CROSS=require).
func C(t testing.TB, src, dir, file string, extra ...string) string {
	t.Helper()
	cc, err := clang()
	if err != nil {
		crossarch.Missing(t, err.Error())
	}
	dst := filepath.Join(dir, file)
	args := append(slices.Clone(cFlags), extra...)
	if err := run(exec.Command(cc, append(args, "-o", dst, src)...)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// run runs cmd, and on failure says what it ran (and where) and what it printed.
func run(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v in %s: %w\n%s", cmd.Args, cmd.Dir, err, out)
	}
	return nil
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Build builds the module name into dir (created if missing), atomically: a reader never
// sees half a file.
func Build(dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	build, ok := builders[name]
	if !ok {
		return "", fmt.Errorf("%w: no module %q; the modules are %v", ErrBuild, name, Names)
	}
	err = build(Root(), tmp.Name())
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrBuild, name, err)
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// buildAS installs the pinned compiler if needed (npm ci) and runs the project's build
// script, copying its output to dst.
func buildAS(dir, dst string) error {
	npm := func(args ...string) error {
		cmd := exec.Command("npm", args...)
		cmd.Dir = dir
		return run(cmd)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "asc")); err != nil {
		if err := npm("ci", "--no-audit", "--no-fund"); err != nil {
			return err
		}
	}
	if err := npm("run", "--silent", "build"); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, asOutput))
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// MeteredDir is the directory under All's where it puts each module metered, as the
// hosts run it (sim/runtime/wasm/meter): the browser app ships these (web/build.mjs), so the
// page runs the very bytes the Go host runs.
const MeteredDir = "metered"

// All builds every module into dir, and each metered into dir/MeteredDir. A module whose
// toolchain is missing (Rust, C) is skipped, and skipped says why.
func All(dir string) (paths, skipped []string, err error) {
	for _, name := range Names {
		p, err := Build(dir, name)
		if errors.Is(err, ErrToolchain) {
			skipped = append(skipped, err.Error())
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		m, err := writeMetered(p, filepath.Join(dir, MeteredDir))
		if err != nil {
			return nil, nil, err
		}
		paths = append(paths, p, m)
	}
	return paths, skipped, nil
}

// writeMetered writes the module in path, metered, into dir under the same name.
func writeMetered(path, dir string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m, err := meter.Meter(b)
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrBuild, filepath.Base(path), err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(path))
	return dst, os.WriteFile(dst, m, 0o644)
}

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Dir is where tests build modules: out/sims/ under the repository root.
func Dir() string { return filepath.Join(Root(), "out", "sims") }

// Module returns the path of module name, built into Dir once per process. The
// AssemblyScript module needs npm, the Rust one rustc and the C one clang: without it
// the test skips (fails under TICKRELAY_CROSS=require).
func Module(t testing.TB, name string) string {
	t.Helper()
	switch name {
	case HashChainAS:
		crossarch.Need(t, "npm", "Debian: apt-get install nodejs npm")
	case HashChainRust, HashChainC:
		find := rustc
		if name == HashChainC {
			find = clang
		}
		if _, err := find(); err != nil {
			crossarch.Missing(t, err.Error())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	p, err := Build(Dir(), name)
	if err != nil {
		t.Fatal(err)
	}
	built[name] = p
	return p
}

// ModuleDir returns a fresh directory holding only the modules names (copies), for a
// --sim-dir that must not see the others.
func ModuleDir(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(Module(t, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
