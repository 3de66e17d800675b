package hashchain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

func TestTheHashChainIsDeterministicAndSeesEveryCommand(t *testing.T) {
	run := func(seed uint64, payload byte) uint64 {
		s, err := sim.New(hashchain.Name, hashchain.Version, sim.Config{Seed: seed, Players: 4})
		require.NoError(t, err)
		for tick := range uint64(100) {
			var cmds []sim.Command
			if tick%3 == 0 {
				cmds = append(cmds, sim.Command{Player: uint32(tick%4 + 1), Seq: uint32(tick), Payload: []byte{payload, byte(tick)}})
			}
			s.Step(tick, cmds)
		}
		return s.Hash()
	}
	t.Run("the same frames give the same hash", func(t *testing.T) {
		assert.Equal(t, run(1, 'a'), run(1, 'a'))
	})
	t.Run("another seed gives another hash", func(t *testing.T) {
		assert.NotEqual(t, run(1, 'a'), run(2, 'a'))
	})
	t.Run("another payload gives another hash", func(t *testing.T) {
		assert.NotEqual(t, run(1, 'a'), run(1, 'b'))
	})
	t.Run("a snapshot restores the chain", func(t *testing.T) {
		a := hashchain.New(sim.Config{Seed: 3, Players: 2})
		a.Step(0, []sim.Command{{Player: 1, Seq: 1, Payload: []byte("x")}})
		b := hashchain.New(sim.Config{Seed: 9, Players: 2})
		require.NoError(t, b.Restore(a.Snapshot()))
		a.Step(1, nil)
		b.Step(1, nil)
		assert.Equal(t, a.Hash(), b.Hash())
		assert.Error(t, b.Restore([]byte("short")))
	})
}
