package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

type countSim struct{ n uint64 }

func (c *countSim) Step(tick uint64, cmds []sim.Command) { c.n += uint64(len(cmds)) + 1 }
func (c *countSim) Hash() uint64                         { d := sim.NewDigest(); d.U64(c.n); return d.Sum() }

func init() {
	sim.Register("registry-test", 1, func(sim.Config) (sim.Sim, error) { return &countSim{}, nil })
	sim.Register("registry-test", 3, func(sim.Config) (sim.Sim, error) { return &countSim{n: 3}, nil })
	sim.Register("registry-twin", 1, func(sim.Config) (sim.Sim, error) { return &countSim{n: 1}, nil })
}

func TestRegistry(t *testing.T) {
	t.Run("New builds the registered version", func(t *testing.T) {
		s, err := sim.New("registry-test", 3, sim.Config{Players: 2})
		require.NoError(t, err)
		assert.Equal(t, uint64(3), s.(*countSim).n)
	})
	t.Run("an unknown version names the one this build has", func(t *testing.T) {
		_, err := sim.New("registry-test", 2, sim.Config{Players: 2})
		require.ErrorIs(t, err, sim.ErrUnknownSim)
		assert.Contains(t, err.Error(), "this build has version 3")
	})
	t.Run("an unknown name lists what is registered", func(t *testing.T) {
		_, err := sim.New("nope", 1, sim.Config{Players: 2})
		require.ErrorIs(t, err, sim.ErrUnknownSim)
		assert.Contains(t, err.Error(), "registry-test")
	})
	t.Run("zero players is a bad config", func(t *testing.T) {
		_, err := sim.New("registry-test", 1, sim.Config{})
		assert.ErrorIs(t, err, sim.ErrBadConfig)
	})
	t.Run("Latest returns the highest version", func(t *testing.T) {
		v, ok := sim.Latest("registry-test")
		require.True(t, ok)
		assert.Equal(t, uint32(3), v)
	})
	t.Run("registering a pair twice panics at init", func(t *testing.T) {
		assert.Panics(t, func() {
			sim.Register("registry-test", 1, func(sim.Config) (sim.Sim, error) { return nil, nil })
		})
	})
	t.Run("a provided module replaces the sim, BuiltIn still gives the one built in", func(t *testing.T) {
		require.NoError(t, sim.Provide("registry-twin", 1, func(sim.Config) (sim.Sim, error) { return &countSim{n: 2}, nil }))
		s, err := sim.New("registry-twin", 1, sim.Config{Players: 1})
		require.NoError(t, err)
		assert.Equal(t, uint64(2), s.(*countSim).n)
		f, ok := sim.BuiltIn("registry-twin", 1)
		require.True(t, ok)
		s, err = f(sim.Config{Players: 1})
		require.NoError(t, err)
		assert.Equal(t, uint64(1), s.(*countSim).n)
		_, ok = sim.BuiltIn("registry-only-provided", 1)
		assert.False(t, ok)
	})
}
