package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
)

// exitUnusable is the exit code the replay tools document for unusable input (0 is ok,
// 1 a divergence): the binary's contract, so a test states it rather than imports it.
const exitUnusable = 2

// repoRoot is the repository's root, relative to this package.
const repoRoot = ".."

// binDir is the test process's build directory, removed by TestMain.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "tickrelay-e2e-*"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// tickrelayBin returns the path of tickrelay built from this checkout for this machine.
func tickrelayBin(t *testing.T) string {
	t.Helper()
	return tickrelayFor(t, runtime.GOOS, runtime.GOARCH)
}

// build is one target's binary, built once.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
)

// tickrelayFor returns the path of tickrelay built for goos/goarch, built on first use and
// shared by every test of the process: a build costs seconds (minutes on a cold build
// cache), each test built its own, and tests running in parallel built the same target
// at once. Another machine's target is built as crossarch.Build builds (CGO_ENABLED=0,
// -trimpath); this machine's as hostBuild does.
func tickrelayFor(t *testing.T, goos, goarch string) string {
	t.Helper()
	target := goos + "-" + goarch
	buildsMu.Lock()
	b := builds[target]
	if b == nil {
		b = &build{path: filepath.Join(binDir, "tickrelay-"+target)}
		builds[target] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		if goos == runtime.GOOS && goarch == runtime.GOARCH {
			b.err = hostBuild(b.path, cmdDir)
		} else {
			b.err = crossarch.Build(b.path, cmdDir, goos, goarch)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// hostBuild builds pkg for this machine with go build's defaults, as go vet builds the
// packages it checks: on a cold build cache (a new CI machine, where vet runs first) the
// binary links what vet compiled, where CGO_ENABLED=0 and -trimpath compiled every
// package, the standard library's included, a second time (about two minutes on 2 cores).
// What a binary computes does not depend on either setting: the cross-architecture tests
// compare every target with the golden file, not with this build.
func hostBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return &crossarch.BuildError{Pkg: pkg, Target: runtime.GOOS + "/" + runtime.GOARCH, Output: string(msg), Err: err}
	}
	return nil
}

// run runs the binary with args and returns its stdout and exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, stderr, code := runBin(t, tickrelayBin(t), nil, args...)
	if code != 0 {
		t.Logf("tickrelay %s: exit %d, stderr: %s", strings.Join(args, " "), code, stderr)
	}
	return out, code
}

// recordFile records a 4-player skirmish match of ticks ticks with the binary and
// returns its path.
func recordFile(t *testing.T, ticks string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "match.tkr")
	out, code := run(t, "replay", "record", "--seed", "3", "--players", "4", "--ticks", ticks, "--out", path)
	require.Equal(t, 0, code)
	require.Contains(t, out, "recorded match")
	return path
}

// cmdDir is the binary's main package, for builds of other platforms.
const cmdDir = repoRoot + "/cmd/tickrelay"
