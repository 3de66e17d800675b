package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
)

// gridSource is a game written as a module author writes one, in C, with a strict
// decoder (one-byte commands 0-3) and two bugs to build in; grid.payloads beside it
// holds its four commands.
var gridSource = filepath.Join(simbuild.Root(), "internal", "testkit", "testsim", "grid", "grid.c")

// runBoth runs the binary's command line, returning its stdout and stderr apart.
func runBoth(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.Execute()
	code = 0
	var ex exitError
	switch {
	case errors.As(err, &ex):
		code = ex.code
	case err != nil:
		code = 2
	}
	if err != nil {
		t.Logf("tickrelay %v: %v", args, err)
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestSimCheckCatchesAModuleReadingUninitialisedMemoryOnlyWithItsOwnCommands(t *testing.T) {
	dir := t.TempDir()
	path := simbuild.C(t, gridSource, dir, "grid.wasm", "-DUNINIT")

	out, code := run(t, "sim", "check", "--node", "off", path)
	assert.Equal(t, 0, code, "random payloads never pass its decoder: the bug is missed\n%s", out)
	assert.Contains(t, out, "payloads: garbage (random bytes) only\n")
	assert.Contains(t, out, "commands: 0 of ")
	assert.Contains(t, out, "warning: next to no command changed the state")
	assert.Contains(t, out, "--payloads FILE")

	payloads := filepath.Join(filepath.Dir(gridSource), "grid.payloads")
	out, code = run(t, "sim", "check", "--node", "off", "--payloads", payloads, path)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "payloads: 4 sample payloads from "+payloads+", and garbage\n")
	assert.Contains(t, out, "FAIL  determinism: at tick ")
	assert.NotContains(t, out, "warning")

	// The same file beside the module is used without the flag.
	b, err := os.ReadFile(payloads)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grid.payloads"), b, 0o644))
	out, code = run(t, "sim", "check", "--node", "off", path)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "payloads: 4 sample payloads from "+filepath.Join(dir, "grid.payloads"))
	assert.Contains(t, out, "FAIL  determinism: at tick ")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "grid.payloads"), []byte("01\nright\n"), 0o644))
	_, code, err = runErr(t, "sim", "check", "--node", "off", path)
	assert.Equal(t, exitUnusable, code)
	assert.ErrorContains(t, err, "grid.payloads: simtest: sample payloads: line 2: not hex")
}

func TestTheSimDirAgreementCheckCatchesATwinThatMovesTwoCellsWithTheSimsOwnCommands(t *testing.T) {
	dir := t.TempDir()
	simbuild.C(t, gridSource, dir, "grid-a.wasm")
	simbuild.C(t, gridSource, dir, "grid-b.wasm", "-DRIGHT=2")

	_, stderr, code := runBoth(t, "sim", "--sim-dir", dir, "check", "--sim", "nothing-here")
	assert.Equal(t, exitUnusable, code)
	assert.Contains(t, stderr, "sim module: grid version 1 (grid-a.wasm); grid-b.wasm claim it too and step the same (0 of ")
	assert.Contains(t, stderr, "warning: the files of grid version 1 were compared on commands that hardly changed its state")
	assert.Contains(t, stderr, "grid.payloads beside its module")

	b, err := os.ReadFile(filepath.Join(filepath.Dir(gridSource), "grid.payloads"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grid-a.payloads"), b, 0o644))
	_, stderr, code = runBoth(t, "sim", "--sim-dir", dir, "check", "--sim", "nothing-here")
	assert.Equal(t, exitUnusable, code)
	assert.Contains(t, stderr, "grid-a.wasm and grid-b.wasm both say they are grid version 1, and they differ: seed 1, 2 players: after tick ")

	// Twins that agree, with the samples: the count says the commands reached the game.
	require.NoError(t, os.Remove(filepath.Join(dir, "grid-b.wasm")))
	simbuild.C(t, gridSource, dir, "grid-b.wasm")
	_, stderr, _ = runBoth(t, "sim", "--sim-dir", dir, "check", "--sim", "nothing-here")
	assert.Regexp(t, `grid-b.wasm claim it too and step the same \([1-9][0-9]* of [0-9]+ commands changed the state \([0-9]+ of [0-9]+ sample payloads, 0 of [0-9]+ garbage\)\)`, stderr)
	assert.NotContains(t, stderr, "warning")
}

func TestAModuleThatMakesItsOwnCommandsIsCheckedOnThem(t *testing.T) {
	path := simbuild.C(t, gridSource, t.TempDir(), "grid.wasm", "-DUNINIT", "-DSAMPLE_EXPORT")
	out, code := run(t, "sim", "check", "--node", "off", path)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "payloads: 64 sample payloads from its tickrelay_sample export, and garbage\n")
	assert.Contains(t, out, "FAIL  determinism: at tick ")
}
