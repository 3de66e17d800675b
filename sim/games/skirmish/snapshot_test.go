package skirmish

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

func dump(t *testing.T, g *Game) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, g.Dump(&b))
	return b.String()
}

func TestSnapshotRoundTrip(t *testing.T) {
	m := newMatch(t, 3, 4, nil)
	for m.g.Tick() < 3000 {
		m.step()
	}
	snap := m.g.Snapshot()
	restored := new(Game)
	require.NoError(t, restored.Restore(snap))

	t.Run("restore of a snapshot gives the same hash, dump and bytes", func(t *testing.T) {
		assert.Equal(t, m.g.Hash(), restored.Hash())
		assert.Equal(t, m.g.SubHashes(), restored.SubHashes())
		assert.Equal(t, dump(t, m.g), dump(t, restored))
		assert.Equal(t, snap, restored.Snapshot())
	})
	t.Run("a restored game steps identically", func(t *testing.T) {
		for m.g.Tick() < 6000 {
			tick := m.g.Tick()
			m.step()
			restored.Step(tick, m.cmds)
			require.Equal(t, m.g.Hash(), restored.Hash(), "tick %d", tick)
		}
	})
	t.Run("restore replaces another game's state entirely", func(t *testing.T) {
		other, err := New(sim.Config{Seed: 99, Players: 8})
		require.NoError(t, err)
		require.NoError(t, other.Restore(snap))
		fresh := new(Game)
		require.NoError(t, fresh.Restore(snap))
		assert.Equal(t, fresh.Hash(), other.Hash())
		assert.Equal(t, 4, other.Players())
	})
}

func TestRestoreRejectsBadBytes(t *testing.T) {
	m := newMatch(t, 3, 3, nil)
	for m.g.Tick() < 500 {
		m.step()
	}
	snap := m.g.Snapshot()
	check := func(t *testing.T, b []byte) {
		t.Helper()
		g := newGame(t, 2, nil)
		h := g.Hash()
		err := g.Restore(b)
		require.ErrorIs(t, err, ErrBadSnapshot)
		assert.Equal(t, h, g.Hash(), "a failed restore leaves the game unchanged")
	}
	t.Run("garbage is refused", func(t *testing.T) { check(t, []byte("hello, world")) })
	t.Run("nothing is refused", func(t *testing.T) { check(t, nil) })
	t.Run("another format version is refused", func(t *testing.T) {
		b := bytes.Clone(snap)
		b[4] = 2
		check(t, b)
	})
	t.Run("every truncation is refused", func(t *testing.T) {
		for n := 0; n < len(snap); n++ {
			check(t, snap[:n])
		}
	})
	t.Run("trailing bytes are refused", func(t *testing.T) { check(t, append(bytes.Clone(snap), 0)) })
	t.Run("flipped bytes never panic", func(t *testing.T) {
		for i := range snap {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(snap)
				b[i] ^= x
				g := new(Game)
				if err := g.Restore(b); err == nil {
					require.NotPanics(t, func() {
						for range 5 {
							g.Step(g.Tick(), nil)
						}
					})
				}
			}
		}
	})
}

func TestDump(t *testing.T) {
	g := newGame(t, 2, nil)
	out := dump(t, g)
	lines := bytes.Count([]byte(out), []byte("\n"))
	assert.Equal(t, 3+2+20, lines, "match, rng, counters, one line per player and per unit")
	assert.Contains(t, out, "player 1 resource=0 out=false spawned=10 units=10 base=32,32\n")
	assert.Contains(t, out, "unit 1 owner=1 kind=soldier x=29 y=29 hp=100 order=idle tx=0 ty=0 target=0 cooldown=0\n")
}

func TestRender(t *testing.T) {
	g := newGame(t, 4, nil)
	var b bytes.Buffer
	require.NoError(t, g.Render(&b, 32, 16))
	out := b.String()
	t.Log("\n" + out)
	lines := bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n"))
	require.Len(t, lines, 1+16+4)
	assert.Equal(t, "tick 0  running", string(lines[0]))
	for _, l := range lines[1:17] {
		assert.Len(t, l, 32)
	}
	assert.Contains(t, out, "1")
	assert.Contains(t, out, "4")
	assert.Contains(t, string(lines[17]), "P1 [1 a A] units=10 soldiers=10 archers=0 resource=0")
	t.Run("a size out of bounds is an error", func(t *testing.T) {
		assert.Error(t, g.Render(&b, 0, 10))
		assert.Error(t, g.Render(&b, 10, MaxRenderSize+1))
		assert.Error(t, new(Game).Render(&b, 10, 10), "a zero game has no map")
	})
}
