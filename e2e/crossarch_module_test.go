package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
)

// TestCrossArchModule runs `sim run` with the skirmish sim as a WebAssembly module
// (--sim-dir) on amd64 natively and on arm64 under qemu-aarch64-static, and requires the
// golden hash stream the native Go sim pins: the module under wazero is the same game on
// both architectures. Tools are handled as in TestCrossArch.
func TestCrossArchModule(t *testing.T) {
	t.Parallel() // computes while the others wait on clocks and processes
	if testing.Short() {
		t.Skip("cross-arch check is not short")
	}
	want, err := os.ReadFile(goldenHashes)
	require.NoError(t, err)
	dir := simbuild.ModuleDir(t, simbuild.Skirmish)
	args := append([]string{"--sim-dir", dir}, goldenArgs...)
	targets := []struct {
		name, goarch, runner string
		run                  func(bin string) *exec.Cmd
	}{
		{"amd64 natively", "amd64", "", func(bin string) *exec.Cmd { return exec.Command(bin, args...) }},
		{"arm64 under qemu", "arm64", "qemu-aarch64-static", func(bin string) *exec.Cmd {
			return exec.Command("qemu-aarch64-static", append([]string{bin}, args...)...)
		}},
	}
	for _, tt := range targets {
		t.Run("the module on "+tt.name+" prints the golden hash stream", func(t *testing.T) {
			if tt.runner != "" {
				crossarch.Need(t, tt.runner, "Debian: apt-get install qemu-user-static")
			}
			bin := tickrelayFor(t, "linux", tt.goarch)
			var stdout, stderr bytes.Buffer
			cmd := tt.run(bin)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
			assert.Equal(t, string(want), stdout.String())
		})
	}
}
