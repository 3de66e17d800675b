package wasm_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

func loadFile(t *testing.T, name string) *wasm.Module {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a WebAssembly module")
	}
	mod, err := wasm.Load(simbuild.Module(t, name), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mod.Close() })
	return mod
}

// randomTick makes up to 6 commands with payloads of 0..40 random bytes.
func randomTick(r *rand.Rand, players int) []sim.Command {
	var cmds []sim.Command
	for i := range r.IntN(7) {
		p := make([]byte, r.IntN(41))
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		cmds = append(cmds, sim.Command{Player: uint32(r.IntN(players) + 1), Seq: uint32(i + 1), Payload: p})
	}
	return cmds
}

func TestTheGoHashChainModuleSeesTheCommandsExactlyAsTheNativeSim(t *testing.T) {
	mod := loadFile(t, simbuild.HashChainGo)
	assert.Equal(t, "hashchain version 1 (hashchain-go.wasm)", mod.String())
	cfg := sim.Config{Seed: 77, Players: 3}
	native := hashchain.New(cfg)
	s, err := mod.New(cfg)
	require.NoError(t, err)
	require.Equal(t, native.Hash(), s.Hash())
	r := rand.New(rand.NewPCG(1, 2))
	var snap []byte
	for tick := uint64(0); tick < 2000; tick++ {
		cmds := randomTick(r, cfg.Players)
		native.Step(tick, cmds)
		s.Step(tick, cmds)
		require.NoError(t, s.(sim.Failer).Err())
		require.Equal(t, native.Hash(), s.Hash(), "tick %d", tick)
		if tick == 1000 {
			snap = s.(sim.Snapshotter).Snapshot()
			assert.Equal(t, native.Snapshot(), snap)
		}
	}
	t.Run("a snapshot restores into another instance", func(t *testing.T) {
		other, err := mod.New(sim.Config{Seed: 1, Players: 3})
		require.NoError(t, err)
		require.NoError(t, other.(sim.Snapshotter).Restore(snap))
		n := hashchain.New(cfg)
		require.NoError(t, n.Restore(snap))
		assert.Equal(t, n.Hash(), other.Hash())
	})
	t.Run("a bad snapshot is refused with the sim's message", func(t *testing.T) {
		other, err := mod.New(cfg)
		require.NoError(t, err)
		err = other.(sim.Snapshotter).Restore([]byte("short"))
		require.ErrorIs(t, err, wasm.ErrFailed)
		assert.Contains(t, err.Error(), "16 bytes")
	})
	t.Run("what the Go sim lacks is not supported", func(t *testing.T) {
		err := s.(sim.Dumper).Dump(&bytes.Buffer{})
		require.ErrorIs(t, err, wasm.ErrFailed)
		assert.Contains(t, err.Error(), "not supported")
		assert.Nil(t, s.(sim.SubHasher).SubHashes())
		assert.NoError(t, s.(sim.Failer).Err(), "an unsupported optional export does not break the sim")
	})
}

func TestTheSkirmishModuleOffersEveryOptionalInterfaceLikeTheNativeGame(t *testing.T) {
	mod := loadFile(t, simbuild.Skirmish)
	opts := scripted.Options{Seed: 4, Players: 2}
	s, err := mod.New(sim.Config{Seed: opts.Seed, Players: opts.Players})
	require.NoError(t, err)
	opts.Sim = s
	m, err := scripted.New(opts)
	require.NoError(t, err)
	var snap []byte
	for tick := 0; tick < 3000; tick++ {
		_, err := m.Next()
		require.NoError(t, err)
		if tick == 1500 {
			snap = s.(sim.Snapshotter).Snapshot()
			assert.Equal(t, m.Game().Snapshot(), snap, "the same snapshot bytes")
		}
	}
	g := m.Game()
	assert.Equal(t, g.SubHashes(), s.(sim.SubHasher).SubHashes())
	var a, b bytes.Buffer
	require.NoError(t, g.Dump(&a))
	require.NoError(t, s.(sim.Dumper).Dump(&b))
	assert.Equal(t, a.String(), b.String())
	over, winner := g.Outcome()
	gotOver, gotWinner := s.(sim.Ender).Outcome()
	assert.Equal(t, [2]any{over, winner}, [2]any{gotOver, gotWinner})

	t.Run("a restored module steps on identically", func(t *testing.T) {
		r, err := mod.New(sim.Config{Seed: opts.Seed, Players: opts.Players})
		require.NoError(t, err)
		require.NoError(t, r.(sim.Snapshotter).Restore(snap))
		n := new(skirmish.Game)
		require.NoError(t, n.Restore(snap))
		for tick := uint64(1501); tick < 1600; tick++ {
			r.Step(tick, nil)
			n.Step(tick, nil)
			require.Equal(t, n.Hash(), r.Hash(), "tick %d", tick)
		}
	})
	t.Run("a config the game refuses is refused through the module", func(t *testing.T) {
		_, err := mod.New(sim.Config{Seed: 1, Players: 2, Params: []byte{0xff, 0xff}})
		require.ErrorIs(t, err, sim.ErrBadConfig)
		assert.Contains(t, err.Error(), "skirmish.wasm: tickrelay_init returned 1")
	})
}

// TestEveryHashChainModuleGivesTheGoHashChainsHashes runs the hash chain written in
// AssemblyScript, Rust and C against the Go sim: the same hashes tick by tick and the
// same snapshot bytes, from any language's toolchain.
func TestEveryHashChainModuleGivesTheGoHashChainsHashes(t *testing.T) {
	for _, file := range []string{simbuild.HashChainAS, simbuild.HashChainRust, simbuild.HashChainC} {
		t.Run(file, func(t *testing.T) { testHashChainModule(t, file) })
	}
}

func testHashChainModule(t *testing.T, file string) {
	mod := loadFile(t, file)
	assert.Equal(t, "hashchain version 1 ("+file+")", mod.String())
	for _, cfg := range []sim.Config{{Seed: 0, Players: 1}, {Seed: 77, Players: 3}, {Seed: ^uint64(0), Players: 16}} {
		native := hashchain.New(cfg)
		s, err := mod.New(cfg)
		require.NoError(t, err)
		require.Equal(t, native.Hash(), s.Hash(), "the initial state of %+v", cfg)
		r := rand.New(rand.NewPCG(cfg.Seed, 9))
		for tick := uint64(0); tick < 3000; tick++ {
			cmds := randomTick(r, cfg.Players)
			native.Step(tick, cmds)
			s.Step(tick, cmds)
			require.NoError(t, s.(sim.Failer).Err())
			require.Equal(t, native.Hash(), s.Hash(), "tick %d of %+v", tick, cfg)
		}
		assert.Equal(t, native.Snapshot(), s.(sim.Snapshotter).Snapshot(), "the same snapshot bytes")
	}
	t.Run("its snapshots restore the Go sim and back", func(t *testing.T) {
		cfg := sim.Config{Seed: 5, Players: 2}
		native := hashchain.New(cfg)
		native.Step(0, []sim.Command{{Player: 1, Seq: 1, Payload: []byte("x")}})
		s, err := mod.New(sim.Config{Seed: 6, Players: 2})
		require.NoError(t, err)
		require.NoError(t, s.(sim.Snapshotter).Restore(native.Snapshot()))
		native.Step(1, nil)
		s.Step(1, nil)
		assert.Equal(t, native.Hash(), s.Hash())
		bad, err := mod.New(cfg)
		require.NoError(t, err)
		err = bad.(sim.Snapshotter).Restore([]byte("short"))
		require.ErrorIs(t, err, wasm.ErrFailed)
		assert.Contains(t, err.Error(), "a hashchain snapshot is 16 bytes")
	})
}

// TestEveryModuleTheProjectShipsPassesTheConformanceCheck holds each module to the
// properties simtest checks: determinism, snapshot completeness, robustness against
// garbage payloads and snapshots, consistent sub-hashes, and the same hashes as the Go
// sim built in under its name (skirmish with its own orders too).
func TestEveryModuleTheProjectShipsPassesTheConformanceCheck(t *testing.T) {
	for _, file := range simbuild.Names {
		t.Run(file, func(t *testing.T) {
			mod := loadFile(t, file)
			opts := simtest.Options{Seed: 11, Players: 3, Ticks: 150}
			ref, ok := sim.BuiltIn(mod.Name, mod.Version)
			require.True(t, ok, "every module the project ships has a Go twin")
			opts.Reference = ref
			if mod.Name == skirmish.Name {
				opts.Payload = func(r *simtest.Rand, _ uint32) []byte { return skirmish.RandomPayload(r.N) }
			}
			rep, err := simtest.Check(mod.New, opts)
			require.NoError(t, err)
			assert.Empty(t, rep.Failures)
			assert.Contains(t, rep.Checked, simtest.Agreement)
		})
	}
}
