package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// Module is a sim module compiled once; New instantiates it, once per sim. It is safe
// for concurrent use (each instance is not).
type Module struct {
	// File is the module's file name, as errors name it.
	File string
	// Name and Version are the sim the module says it is.
	Name    string
	Version uint32
	// Size is the module's size in bytes.
	Size int
	// Agreeing are the other files of a directory that claim the same sim and step the
	// same (LoadDir), in name order; this one was kept as the smallest.
	Agreeing []string
	// Payloads are the sim's sample commands: those its tickrelay_sample export makes
	// (SampleCount, when it has one), then those of the payload file beside each of the
	// module's files in a directory (PayloadFile, LoadDir): what the agreement check
	// sends beside garbage, and what players without a script of the sim send. Nil when
	// there are none.
	Payloads [][]byte
	// Effect, for a module that other files agreed with (LoadDir), is how many commands
	// of that agreement check changed the state: when it is Low, the files were compared
	// on commands the sim ignored.
	Effect *simtest.Effect

	opts     Options
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	reactor  bool            // exports _initialize
	has      map[string]bool // optional exports present
}

// cache keeps compiled machine code per module content for the process, so loading the
// same module again (another tool, another test) does not compile it again.
var cache = sync.OnceValue(wazero.NewCompilationCache)

// Load compiles the module in path and checks it against ABI version 1: its exports and
// their signatures, its imports, its ABI version, sim name and version. Errors wrap
// ErrLoad and name the file.
func Load(path string, opts *Options) (*Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLoad, err)
	}
	return LoadBytes(filepath.Base(path), b, opts)
}

// LoadBytes is Load for a module already in memory; file names it in errors.
func LoadBytes(file string, wasm []byte, opts *Options) (*Module, error) {
	o := opts.withDefaults()
	ctx := context.Background()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrLoad, file, fmt.Sprintf(format, args...))
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2).
		WithMemoryLimitPages(o.MemoryLimitPages).
		WithCompilationCache(cache()))
	m := &Module{File: file, Size: len(wasm), opts: o, rt: rt, has: map[string]bool{}}
	fail := func(err error) (*Module, error) {
		_ = rt.Close(ctx)
		return nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("%w: %s: the host's WASI: %w", ErrLoad, file, err))
	}
	if !o.Unmetered {
		metered, err := meter.Meter(wasm)
		if err != nil {
			return fail(bad("%v", err))
		}
		wasm = metered
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return fail(bad("not a WebAssembly module this host runs (WebAssembly 2.0, no threads, no relaxed SIMD): %v", err))
	}
	m.compiled = compiled
	if err := m.checkImports(); err != nil {
		return fail(bad("%v", err))
	}
	if err := m.checkExports(); err != nil {
		return fail(bad("%v", err))
	}
	if err := m.readIdentity(); err != nil {
		return fail(err)
	}
	return m, nil
}

// checkImports refuses every import but the functions of the host's WASI, with their
// signatures.
func (m *Module) checkImports() error {
	if mems := m.compiled.ImportedMemories(); len(mems) > 0 {
		mod, name, _ := mems[0].Import()
		return fmt.Errorf("it imports the memory %s.%s; a sim module exports its own memory (docs/wasm-sims.md)", mod, name)
	}
	wasi := m.rt.Module(abi.WASIModule).ExportedFunctionDefinitions()
	for _, d := range m.compiled.ImportedFunctions() {
		mod, name, _ := d.Import()
		if mod != abi.WASIModule {
			return fmt.Errorf("it imports %s.%s, which the host does not provide; a sim module may import only %s functions (docs/wasm-sims.md)", mod, name, abi.WASIModule)
		}
		want, ok := wasi[name]
		if !ok {
			return fmt.Errorf("it imports %s.%s, which the host's WASI does not have", mod, name)
		}
		if got := sigOf(d); !got.equal(sigOf(want)) {
			return fmt.Errorf("it imports %s.%s as %v; the host's is %v", mod, name, got, sigOf(want))
		}
	}
	return nil
}

// checkExports requires memory and every required export with its signature, and checks
// the signature of the optional ones present.
func (m *Module) checkExports() error {
	if _, ok := m.compiled.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("it does not export its memory as %q", abi.ExportMemory)
	}
	fns := m.compiled.ExportedFunctions()
	for _, r := range required {
		d, ok := fns[r.name]
		if !ok {
			return fmt.Errorf("it does not export %s, a required function %v (docs/wasm-sims.md)", r.name, r.sig)
		}
		if got := sigOf(d); !got.equal(r.sig) {
			return fmt.Errorf("it exports %s as %v; ABI version %d needs %v", r.name, got, abi.Version, r.sig)
		}
	}
	for name, want := range optional {
		d, ok := fns[name]
		if !ok {
			continue
		}
		if got := sigOf(d); !got.equal(want) {
			return fmt.Errorf("it exports %s as %v; ABI version %d needs %v", name, got, abi.Version, want)
		}
		m.has[name] = true
	}
	m.reactor = m.has[abi.ExportReactor]
	if m.has[abi.ExportSnapshot] != m.has[abi.ExportRestore] {
		return fmt.Errorf("it exports only one of %s and %s; they come as a pair", abi.ExportSnapshot, abi.ExportRestore)
	}
	return nil
}

// readIdentity instantiates the module once to read its ABI version, name and version.
func (m *Module) readIdentity() error {
	in, err := m.instantiate()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLoad, err)
	}
	defer in.close()
	v, err := in.call(abi.ExportABI)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLoad, err)
	}
	if uint32(v) != abi.Version {
		return fmt.Errorf("%w: %s: %s returned %d; this host speaks ABI version %d (docs/wasm-sims.md)", ErrLoad, m.File, abi.ExportABI, int32(v), abi.Version)
	}
	name, err := in.callBytes(abi.ExportName)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLoad, err)
	}
	if err := sim.CheckName(string(name)); err != nil {
		return fmt.Errorf("%w: %s: %s: %w", ErrLoad, m.File, abi.ExportName, err)
	}
	ver, err := in.call(abi.ExportVersion)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLoad, err)
	}
	if int32(ver) < 1 {
		return fmt.Errorf("%w: %s: %s returned %d; a sim version is 1 or more", ErrLoad, m.File, abi.ExportVersion, int32(ver))
	}
	m.Name, m.Version = string(name), uint32(ver)
	if m.has[abi.ExportSample] {
		if m.Payloads, err = samples(in); err != nil {
			return fmt.Errorf("%w: %w", ErrLoad, err)
		}
	}
	return nil
}

// SampleCount is how many commands the host asks a module's tickrelay_sample for, once
// when it loads it: seeds 0 to SampleCount-1, players 1 to 8 in turn.
const SampleCount = 64

// samples asks the module for its own commands (tickrelay_sample), each bounded as a
// sample payload file's.
func samples(in *instance) ([][]byte, error) {
	out := make([][]byte, 0, SampleCount)
	for i := range uint64(SampleCount) {
		p, err := in.callBytes(abi.ExportSample, i, 1+i%8)
		if err != nil {
			return nil, err
		}
		if len(p) > simtest.MaxSampleBytes {
			return nil, fmt.Errorf("%s: %s(%d, %d) returned %d bytes; a sample command has at most %d", in.mod.File, abi.ExportSample, i, 1+i%8, len(p), simtest.MaxSampleBytes)
		}
		out = append(out, p)
	}
	return out, nil
}

// Close frees the module's compiled code and every instance still open.
func (m *Module) Close() error { return m.rt.Close(context.Background()) }

// String names the module: "skirmish version 1 (skirmish.wasm)".
func (m *Module) String() string {
	return fmt.Sprintf("%s version %d (%s)", m.Name, m.Version, m.File)
}

// New builds a sim from cfg in a fresh instance of the module: it is a sim.Factory. The
// sim implements sim.Failer, sim.Ender, sim.SubHasher and sim.Dumper, and
// sim.Snapshotter when the module exports snapshot and restore; Close frees it (else the
// garbage collector does). A config the module refuses gives an error wrapping
// sim.ErrBadConfig with the module's message.
func (m *Module) New(cfg sim.Config) (sim.Sim, error) {
	in, err := m.instantiate()
	if err != nil {
		return nil, err
	}
	s, err := newSim(m, in, cfg)
	if err != nil {
		in.close()
		return nil, err
	}
	if m.has[abi.ExportSnapshot] {
		return &snapshotSim{s}, nil
	}
	return s, nil
}
