package lockstep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

// TestAFrameLogReplaysWhatItKeptAndAClonePartsFromIt: the state a log's frames give equals
// the state the frames gave live, after dropping a prefix and in a clone, and a clone
// does not change when the log goes on.
func TestAFrameLogReplaysWhatItKeptAndAClonePartsFromIt(t *testing.T) {
	newPeer := func() *lockstep.Peer {
		return lockstep.NewPeer(hashchain.New(sim.Config{Seed: 9, Players: 3}), lockstep.PeerOptions{Every: 10})
	}
	live := newPeer()
	var log lockstep.FrameLog
	want := map[uint64]uint64{}
	frame := func(tick uint64) lockstep.Frame {
		f := lockstep.Frame{Tick: tick}
		if tick%5 != 0 {
			f.Commands = []sim.Command{{Player: uint32(1 + tick%3), Seq: uint32(tick), Payload: []byte{byte(tick), 7}}}
		}
		return f
	}
	for tick := range uint64(100) {
		f := frame(tick)
		_, _, err := live.Apply(f)
		require.NoError(t, err)
		log.Add(f)
		want[tick] = live.Hash()
	}
	clone := log.Clone(59)
	assert.Equal(t, 48, clone.Len(), "the non-empty frames of ticks 0..59")
	for tick := uint64(100); tick < 120; tick++ {
		log.Add(frame(tick))
	}
	p := newPeer()
	require.NoError(t, clone.Replay(p, 59, nil))
	assert.Equal(t, want[59], p.Hash())

	// From a state after tick 39, with the frames up to 39 dropped.
	mid := newPeer()
	require.NoError(t, clone.Replay(mid, 39, nil))
	state := mid.Sim().(sim.Snapshotter).Snapshot()
	log.DropThrough(39)
	q := newPeer()
	require.NoError(t, q.Restore(state, 39))
	var got []uint64
	require.NoError(t, log.Replay(q, 99, func(uint64) { got = append(got, q.Hash()) }))
	assert.Equal(t, want[99], q.Hash())
	assert.Len(t, got, 60)
	log.Reset()
	assert.Equal(t, 0, log.Len())
}
