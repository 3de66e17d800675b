package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
)

// goldenHashes is the hash stream that internal/tools/scripted pins on the build machine.
const goldenHashes = repoRoot + "/internal/tools/scripted/testdata/skirmish-seed1-p4.hashes"

// goldenArgs produce goldenHashes; keep them in step with internal/tools/scripted's golden test.
var goldenArgs = []string{"sim", "run", "--sim", "skirmish", "--seed", "1", "--players", "4", "--ticks", "20000", "--every", "100"}

// TestCrossArch builds tickrelay for linux/arm64 and js/wasm, runs `sim run` under
// qemu-aarch64-static and node, and requires the byte-identical hash stream the amd64
// build pins in the golden file. Without the tools it skips, unless TICKRELAY_CROSS=require
// (as in CI and `make cross`), where a missing tool fails.
func TestCrossArch(t *testing.T) {
	t.Parallel() // computes while the others wait on clocks and processes
	if testing.Short() {
		t.Skip("cross-arch check is not short")
	}
	want, err := os.ReadFile(goldenHashes)
	require.NoError(t, err)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH to cross-compile")

	out, err := exec.Command(goBin, "env", "GOROOT").Output()
	require.NoError(t, err)
	wasmExec := filepath.Join(strings.TrimSpace(string(out)), "lib", "wasm", "wasm_exec_node.js")

	targets := []struct {
		name, goos, goarch, runner string
		run                        func(bin string) *exec.Cmd
	}{
		{"arm64 under qemu", "linux", "arm64", "qemu-aarch64-static", func(bin string) *exec.Cmd {
			return exec.Command("qemu-aarch64-static", append([]string{bin}, goldenArgs...)...)
		}},
		{"wasm under node", "js", "wasm", "node", func(bin string) *exec.Cmd {
			return exec.Command("node", append([]string{wasmExec, bin}, goldenArgs...)...)
		}},
	}
	for _, tt := range targets {
		t.Run(tt.name+" prints the golden hash stream", func(t *testing.T) {
			crossarch.Need(t, tt.runner, "Debian: apt-get install qemu-user-static nodejs")
			bin := tickrelayFor(t, tt.goos, tt.goarch)

			var stdout, stderr bytes.Buffer
			cmd := tt.run(bin)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
			assert.Equal(t, string(want), stdout.String())
		})
	}
}
