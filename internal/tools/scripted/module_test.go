package scripted_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

// TestTheSkirmishModuleGivesTheNativeHashStream steps the skirmish sim built as a
// WebAssembly module (GOOS=wasip1, run by wazero) beside the native Go game on the same
// 20,000 scripted ticks: the hashes agree after every tick, and the printed stream is the
// pinned golden file. e2e's TestCrossArchModule runs the same on arm64 under qemu.
func TestTheSkirmishModuleGivesTheNativeHashStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a WebAssembly module for 20,000 ticks")
	}
	mod, err := wasm.Load(simbuild.Module(t, simbuild.Skirmish), nil)
	require.NoError(t, err)
	defer mod.Close()
	require.Equal(t, skirmish.Name, mod.Name)
	require.Equal(t, uint32(skirmish.Version), mod.Version)
	opts := scripted.Options{Seed: 1, Players: 4}
	opts.Sim, err = mod.New(sim.Config{Seed: opts.Seed, Players: opts.Players})
	require.NoError(t, err)

	// One run of the module (the module is slower than the game) checks both.
	sameAsTheGame := func(m *scripted.Match, tick uint64) error {
		if err := m.Sim().(sim.Failer).Err(); err != nil {
			return fmt.Errorf("tick %d: the module failed: %w", tick, err)
		}
		if got, want := m.Sim().Hash(), m.Game().Hash(); got != want {
			return fmt.Errorf("tick %d: the module's hash %016x, the native game's %016x", tick, got, want)
		}
		return nil
	}
	var got bytes.Buffer
	require.NoError(t, scripted.WriteHashesChecked(&got, opts, 20000, 100, sameAsTheGame), "the module's hash after every tick is the native game's")
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got.String(), "the module's stream as the golden file prints it")
}
