package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/wasmbuild"
)

func TestSimCheckPassesTheBuiltInSimsAndNamesWhatAModuleBreaks(t *testing.T) {
	out, code := run(t, "sim", "check", "--sim", "skirmish", "--ticks", "120", "--players", "4")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "checking skirmish version 1: seed 1, 4 players, 120 ticks\nok    determinism\nok    robustness\nok    sub-hashes\nok    dump and outcome\nok    snapshot completeness\n")

	// A module whose step never ends at tick 5 fails there, on its fuel, every time.
	path := filepath.Join(t.TempDir(), "stuck.wasm")
	require.NoError(t, os.WriteFile(path, wasmbuild.Runaway("stuck", 5), 0o644))
	out, code = run(t, "sim", "check", "--seed", "3", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAIL  robustness: at tick 5 (seed 3): stepping it failed: wasm: the module failed: stuck.wasm: tickrelay_step at tick 5: ran out of fuel")

	_, code = run(t, "sim", "check", "--sim", "nope")
	assert.Equal(t, exitUnusable, code)
}
