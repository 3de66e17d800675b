package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
	"github.com/tickrelay/tickrelay/web"
)

func TestSimCheckPassesTheBuiltInSimsAndNamesWhatAModuleBreaks(t *testing.T) {
	out, code := run(t, "sim", "check", "--sim", "skirmish", "--ticks", "120", "--players", "4")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "checking skirmish version 1: seed 1, 4 players, 120 ticks\npayloads: skirmish orders and garbage\nok    determinism\nok    robustness\nok    sub-hashes\nok    dump and outcome\nok    snapshot completeness\n")

	// A module whose step never ends at tick 5 fails there, on its fuel, every time.
	path := filepath.Join(t.TempDir(), "stuck.wasm")
	require.NoError(t, os.WriteFile(path, wasmbuild.Runaway("stuck", 5), 0o644))
	out, code = run(t, "sim", "check", "--seed", "3", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAIL  robustness: at tick 5 (seed 3): stepping it failed: wasm: the module failed: stuck.wasm: tickrelay_step at tick 5: ran out of fuel")

	// A module claiming to be the built-in hash chain is held to it, tick by tick.
	path = filepath.Join(t.TempDir(), "impostor.wasm")
	require.NoError(t, os.WriteFile(path, wasmbuild.Runaway("hashchain", 1000), 0o644))
	out, code = run(t, "sim", "check", "--seed", "3", "--ticks", "50", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "reference: the hashchain version 1 built into tickrelay\n")
	assert.Contains(t, out, "ok    determinism\n")
	assert.Contains(t, out, "FAIL  agreement with the reference: at tick 0 (seed 3): the reference is the first, this sim the second: the initial hash is ")

	_, code = run(t, "sim", "check", "--sim", "nope")
	assert.Equal(t, exitUnusable, code)
}

// TestSimCheckStepsAModuleInNodeAsUnderWazero runs the check's Node leg: the hash chain in
// AssemblyScript, Rust and C steps in V8, through the browser's host code, as under
// wazero, and a stream compared with another sim's is a failure at the first hash. (The
// modules Go builds take most of a minute to meter and compile under the race detector;
// the browser tests in e2e/ run skirmish's module through the same host code.)
func TestSimCheckStepsAModuleInNodeAsUnderWazero(t *testing.T) {
	if _, ok := web.NodeSimRunner(); !ok {
		crossarch.Missing(t, "the browser app is not built (make web): it holds the Node host")
	}
	crossarch.Need(t, "node", "Debian: apt-get install nodejs")
	for _, name := range []string{simbuild.HashChainAS, simbuild.HashChainRust, simbuild.HashChainC} {
		path := simbuild.Module(t, name)
		mod, err := wasm.Load(path, nil)
		require.NoError(t, err)
		opts := simtest.Options{Seed: 4, Players: 3, Ticks: 100}
		skipped, failure, err := checkInNode(t.Context(), path, mod.New, opts)
		require.NoError(t, err, name)
		require.Empty(t, skipped)
		require.Nil(t, failure, name)
		require.NoError(t, mod.Close())
	}
	path := simbuild.Module(t, simbuild.HashChainC)
	out, code := run(t, "sim", "check", "--ticks", "60", "--node", "require", path)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "ok    same hashes in Node\n")

	opts := simtest.Options{Seed: 2, Players: 3, Ticks: 20}
	skipped, failure, err := checkInNode(t.Context(), path, func(cfg sim.Config) (sim.Sim, error) { return skirmish.New(cfg) }, opts)
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.NotNil(t, failure)
	assert.Equal(t, inNode, failure.Property)
	assert.Regexp(t, `^wazero hashes [0-9a-f]{16}, Node [0-9a-f]{16}$`, failure.Detail)
}

func TestSimMeterWritesTheModuleAsTheRelayRunsItAndRefusesTwice(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "metered.wasm")
	msg, code := run(t, "sim", "meter", simbuild.Module(t, simbuild.HashChainC), out)
	require.Equal(t, 0, code, msg)
	assert.Contains(t, msg, "metered into "+out)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(b, []byte(abi.ExportFuel)), "exports the fuel counter")

	_, code, err = runErr(t, "sim", "meter", out, filepath.Join(dir, "twice.wasm"))
	assert.NotEqual(t, 0, code)
	assert.ErrorContains(t, err, "metered before")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "not.wasm"), []byte("hello"), 0o644))
	_, code, err = runErr(t, "sim", "meter", filepath.Join(dir, "not.wasm"), filepath.Join(dir, "x.wasm"))
	assert.NotEqual(t, 0, code)
	assert.ErrorContains(t, err, "metering "+filepath.Join(dir, "not.wasm"))
	assert.NoFileExists(t, filepath.Join(dir, "x.wasm"))
}
