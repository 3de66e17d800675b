package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/relay"
)

// runBin runs the built binary and returns stdout, stderr and the exit code.
func runBin(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestEveryReplayToolTakesTheSimFromADirectoryOfModules(t *testing.T) {
	t.Parallel() // computes while the others wait on clocks and processes
	if testing.Short() {
		t.Skip("builds the binary and a WebAssembly module")
	}
	bin := tickrelayBin(t)
	dir := simbuild.ModuleDir(t, simbuild.Skirmish)
	path := filepath.Join(t.TempDir(), "match.tkr")
	_, stderr, code := runBin(t, bin, nil, "replay", "record", "--seed", "3", "--players", "4", "--ticks", "3000", "--out", path)
	require.Equal(t, 0, code, stderr)

	t.Run("verify passes with the built-in sim", func(t *testing.T) {
		out, stderr, code := runBin(t, bin, nil, "replay", "verify", path)
		assert.Equal(t, 0, code, stderr)
		assert.Contains(t, out, "100 checkpoints match")
		assert.NotContains(t, stderr, "sim module")
	})
	t.Run("verify passes with the module, by flag or environment", func(t *testing.T) {
		for _, how := range []struct {
			env  []string
			args []string
		}{
			{nil, []string{"replay", "verify", "--sim-dir", dir, path}},
			{[]string{"TICKRELAY_SIM_DIR=" + dir}, []string{"replay", "verify", path}},
		} {
			out, stderr, code := runBin(t, bin, how.env, how.args...)
			assert.Equal(t, 0, code, stderr)
			assert.Contains(t, out, "100 checkpoints match")
			assert.Contains(t, stderr, "sim module: skirmish version 1 (skirmish.wasm)")
		}
	})
	t.Run("the other tools run on the module too", func(t *testing.T) {
		for _, args := range [][]string{
			{"replay", "info", path},
			{"replay", "dump", path, "--from", "100", "--to", "110"},
			{"replay", "diff", path, path},
			{"replay", "play", path, "--speed", "0", "--from", "2000"},
			{"watch", path, "--speed", "0", "--from", "2900"},
			{"sim", "run", "--ticks", "300"},
		} {
			_, stderr, code := runBin(t, bin, nil, append(args, "--sim-dir", dir)...)
			assert.Equal(t, 0, code, "%v: %s", args, stderr)
			assert.Contains(t, stderr, "sim module: skirmish", "%v", args)
		}
	})
	t.Run("a directory with a bad module is unusable input naming the file", func(t *testing.T) {
		bad := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(bad, "broken.wasm"), []byte("not wasm"), 0o644))
		_, stderr, code := runBin(t, bin, nil, "replay", "verify", "--sim-dir", bad, path)
		assert.Equal(t, exitUnusable, code)
		assert.Contains(t, stderr, "broken.wasm")
	})
}

func TestServeChecksTheParamsOfAModuleSimAtCreation(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	if testing.Short() {
		t.Skip("starts a real relay process")
	}
	bin := tickrelayBin(t)
	dir := simbuild.ModuleDir(t, simbuild.Skirmish)
	addr := freePort(t)
	startRelay(t, bin, "--listen", addr, "--admin", "", "--replay-dir", "", "--admin-key", "k", "--log-level", "warn", "--sim-dir", dir)
	base := "http://" + addr
	waitReady(t, base)
	ctx := t.Context()
	_, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: "skirmish", Players: 2, Params: []byte{0xff, 0xff}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "400")
	assert.Contains(t, err.Error(), "skirmish.wasm: tickrelay_init returned 1", "the module, not the built-in sim, judged the params")
	_, err = relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: "skirmish", Players: 2})
	assert.NoError(t, err)
}
