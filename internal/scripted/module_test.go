package scripted_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/scripted"
	"github.com/tickrelay/tickrelay/internal/simbuild"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/skirmish"
	"github.com/tickrelay/tickrelay/sim/wasm"
)

// TestTheSkirmishModuleGivesTheNativeHashStream steps the skirmish sim built as a
// WebAssembly module (GOOS=wasip1, run by wazero) beside the native Go game on the same
// 20,000 scripted ticks: the hashes agree after every tick, and the printed stream is the
// pinned golden file. cmd/tickrelay's TestCrossArch runs the same on arm64 under qemu.
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
	newModuleSim := func() sim.Sim {
		s, err := mod.New(sim.Config{Seed: opts.Seed, Players: opts.Players})
		require.NoError(t, err)
		return s
	}

	t.Run("after every tick", func(t *testing.T) {
		o := opts
		o.Sim = newModuleSim()
		m, err := scripted.New(o)
		require.NoError(t, err)
		for tick := 0; tick < 20000; tick++ {
			_, err := m.Next()
			require.NoError(t, err)
			h := m.Sim().Hash()
			require.NoError(t, m.Sim().(sim.Failer).Err(), "tick %d", tick)
			require.Equal(t, m.Game().Hash(), h, "tick %d", tick)
		}
	})
	t.Run("as the golden stream prints it", func(t *testing.T) {
		o := opts
		o.Sim = newModuleSim()
		var got bytes.Buffer
		require.NoError(t, scripted.WriteHashes(&got, o, 20000, 100))
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), got.String())
	})
}
