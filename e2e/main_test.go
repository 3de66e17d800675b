package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The exit codes the replay tools document: 0 ok, 1 a divergence, 2 unusable input.
const (
	exitOK       = 0
	exitUnusable = 2
)

// repoRoot is the repository's root, relative to this package.
const repoRoot = ".."

var (
	binDir   string // the test process's build directory, removed by TestMain
	binOnce  sync.Once
	binPath  string
	binError error
)

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

// tickrelayBin returns the path of tickrelay built from this checkout, built on first use and
// shared by every test of the process: a build costs seconds, and each test built its own.
func tickrelayBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(binDir, "tickrelay")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/tickrelay")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			binError = fmt.Errorf("go build ./cmd/tickrelay: %w\n%s", err, out)
		}
	})
	require.NoError(t, binError)
	return binPath
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

// hex16 is a hash as the tools and pages print it.
func hex16(v uint64) string { return fmt.Sprintf("%016x", v) }

// cmdDir is the binary's main package, for builds of other platforms.
const cmdDir = repoRoot + "/cmd/tickrelay"
