package lockstep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// TestHealPutsAWrongPeerBackInTheRightGame: two peers of a tally, the second's sim going
// wrong once at tick 25. Healed with the right peer's state after checkpoint 29, while it
// is at tick 59, it re-applies its kept frames and is in the right state from there on;
// a forged state, a state it has no frames after, or one too large are refused and leave
// it as it was.
func TestHealPutsAWrongPeerBackInTheRightGame(t *testing.T) {
	right := lockstep.NewPeer(testsim.NewTally(2, 0), lockstep.PeerOptions{Every: 10})
	newWrong := func() (sim.Sim, error) { return testsim.NewTally(2, 25), nil }
	ws, _ := newWrong()
	wrong := lockstep.NewPeer(ws, lockstep.PeerOptions{Every: 10})
	h := lockstep.NewHistory(newWrong, 4) // snapshots after 19, 39, 59: frames from 20 on
	var state []byte
	var stateHash uint64
	step := func(tick uint64) {
		f := lockstep.Frame{Tick: tick}
		if tick%4 == 0 {
			f.Commands = []sim.Command{{Player: uint32(1 + tick%8/4), Seq: uint32(tick + 1), Payload: []byte{1}}}
		}
		_, _, err := right.Apply(f)
		require.NoError(t, err)
		c, report, err := wrong.Apply(f)
		require.NoError(t, err)
		h.Frame(f)
		if report {
			h.Checkpoint(c.Tick, ws)
		}
		if tick == 29 {
			state, stateHash = right.Sim().(sim.Snapshotter).Snapshot(), right.Hash()
		}
	}
	for tick := range uint64(60) {
		step(tick)
	}
	require.NotEqual(t, right.Hash(), wrong.Hash(), "the wrong peer went wrong")
	wrongHash := wrong.Hash()

	forged := append([]byte(nil), state...)
	forged[8]++ // player 1's count
	refused := map[string][]byte{"forged": forged, "too large": make([]byte, lockstep.MaxHealState+1)}
	for name, st := range refused {
		_, err := h.Heal(wrong, 29, st, stateHash)
		require.ErrorIs(t, err, lockstep.ErrHealRefused, name)
		assert.NotContains(t, err.Error(), "no longer kept", name)
		assert.Equal(t, wrongHash, wrong.Hash(), "%s: untouched", name)
		assert.Equal(t, uint64(60), wrong.Next(), name)
	}
	_, err := h.Heal(wrong, 60, state, stateHash)
	require.ErrorIs(t, err, lockstep.ErrHealRefused, "a state from the future")

	through, err := h.Heal(wrong, 29, state, stateHash)
	require.NoError(t, err)
	assert.Equal(t, uint64(59), through)
	assert.Equal(t, right.Hash(), wrong.Hash(), "healed")
	assert.Equal(t, uint64(60), wrong.Next())
	for tick := uint64(60); tick < 100; tick++ {
		step(tick)
		require.Equal(t, right.Hash(), wrong.Hash(), "after tick %d", tick)
	}
	p, err := h.Rebuild(79, true, 10)
	require.NoError(t, err, "the History goes on from the healed state")
	assert.Equal(t, stateAt(t, 79), p.Hash())
	_, err = h.Heal(wrong, 9, state, stateHash)
	require.ErrorIs(t, err, lockstep.ErrHealRefused, "the frames after 9 are gone: the History starts at 29 now")
	assert.ErrorContains(t, err, "no longer kept")
}

// stateAt is the right tally's hash after tick, on step's frames.
func stateAt(t *testing.T, tick uint64) uint64 {
	t.Helper()
	p := lockstep.NewPeer(testsim.NewTally(2, 0), lockstep.PeerOptions{Every: 10})
	for tk := range tick + 1 {
		f := lockstep.Frame{Tick: tk}
		if tk%4 == 0 {
			f.Commands = []sim.Command{{Player: uint32(1 + tk%8/4), Seq: uint32(tk + 1), Payload: []byte{1}}}
		}
		_, _, err := p.Apply(f)
		require.NoError(t, err)
	}
	return p.Hash()
}

func TestRestoreNeedsASnapshotter(t *testing.T) {
	p := lockstep.NewPeer(struct{ sim.Sim }{testsim.NewTally(2, 0)}, lockstep.PeerOptions{})
	assert.ErrorContains(t, p.Restore(nil, 3), "not a sim.Snapshotter")
	assert.Equal(t, uint64(0), p.Next())
}
