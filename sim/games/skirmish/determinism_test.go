package skirmish

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeterminism(t *testing.T) {
	const ticks = 20000
	a, b := newMatch(t, 7, 4, nil), newMatch(t, 7, 4, nil)
	c := newMatch(t, 8, 4, nil)
	differed := false
	for tick := uint64(0); tick < ticks; tick++ {
		a.step()
		b.step()
		c.step()
		if ha, hb := a.g.Hash(), b.g.Hash(); ha != hb {
			require.Failf(t, "games with the same seed diverged", "tick %d: %#x != %#x", tick, ha, hb)
		}
		differed = differed || c.g.Hash() != a.g.Hash()
	}
	t.Run("two games with the same seed and bots stay hash-equal every tick", func(t *testing.T) {
		assert.Equal(t, a.g.Snapshot(), b.g.Snapshot())
		assert.Equal(t, uint64(ticks), a.g.Tick())
	})
	t.Run("a game with another seed differs", func(t *testing.T) {
		assert.True(t, differed)
		assert.NotEqual(t, a.g.Hash(), c.g.Hash())
	})
	t.Run("the bots exercised every kind of command", func(t *testing.T) {
		cnt := a.g.Counters()
		assert.Positive(t, cnt.Applied)
		assert.Positive(t, cnt.Malformed)
		assert.Positive(t, cnt.Killed)
		assert.Positive(t, cnt.Spawned)
	})
}

// TestBotMatchesEnd checks the bots play matches to an end, in 5,000 to 20,000 ticks for
// four players on the default map.
func TestBotMatchesEnd(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		m := newMatch(t, seed, 4, nil)
		end := m.run(20000)
		_, winner := m.g.Outcome()
		t.Logf("seed %d: over at tick %d, winner %d", seed, end, winner)
		assert.NotZero(t, end, "seed %d ends within 20000 ticks", seed)
		assert.GreaterOrEqual(t, end, uint64(5000), "seed %d lasts at least 5000 ticks", seed)
		assert.NotZero(t, winner, "seed %d has a winner", seed)
	}
}
