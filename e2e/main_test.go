package e2e_test

import (
	"fmt"
	"os"
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
// at once. Every target is built alike (crossarch.Build: CGO_ENABLED=0, -trimpath), so
// the native binary is the one the cross-architecture tests compare with.
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
	b.once.Do(func() { b.err = crossarch.Build(b.path, cmdDir, goos, goarch) })
	require.NoError(t, b.err)
	return b.path
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
