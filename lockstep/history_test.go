package lockstep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

// play steps a hash chain through ticks 0..n-1 (a command every third tick), keeping h,
// and returns the hash after each tick.
func play(t *testing.T, h *lockstep.History, n uint64, snapshots bool) []uint64 {
	t.Helper()
	var s sim.Sim = hashchain.New(sim.Config{Seed: 3, Players: 2})
	if !snapshots {
		s = struct{ sim.Sim }{s} // hides Snapshotter
	}
	p := lockstep.NewPeer(s, lockstep.PeerOptions{Every: 10})
	var hashes []uint64
	for tick := range n {
		f := lockstep.Frame{Tick: tick}
		if tick%3 == 0 {
			f.Commands = []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: []byte{byte(tick)}}}
		}
		c, report, err := p.Apply(f)
		require.NoError(t, err)
		h.Frame(f)
		if report {
			h.Checkpoint(c.Tick, s)
		}
		hashes = append(hashes, p.Hash())
	}
	return hashes
}

func chainFactory() (sim.Sim, error) { return hashchain.New(sim.Config{Seed: 3, Players: 2}), nil }

func TestHistoryRebuildsTheStateAfterAKeptCheckpointAndStepsOnTheSame(t *testing.T) {
	h := lockstep.NewHistory(chainFactory, 3)
	want := play(t, h, 95, true)                         // checkpoints 9, 19, ..., 89; snapshots at every second: 19, 39, 59, 79; 39..79 kept
	for _, after := range []uint64{39, 49, 69, 79, 89} { // at a snapshot, between two, past the last
		p, err := h.Rebuild(after, true, 10)
		require.NoError(t, err)
		assert.Equal(t, want[after], p.Hash(), "after tick %d", after)
		var got []uint64
		require.NoError(t, h.Replay(p, 94, func(uint64) { got = append(got, p.Hash()) }))
		assert.Equal(t, want[after+1:95], got)
	}
	_, err := h.Rebuild(29, true, 10)
	assert.ErrorContains(t, err, "not kept (the oldest kept is after tick 39)")
	_, err = h.Rebuild(0, false, 10)
	assert.ErrorContains(t, err, "no longer kept")
}

func TestHistoryOfASimWithoutSnapshotsRebuildsFromTheStartWhileItCan(t *testing.T) {
	h := lockstep.NewHistory(chainFactory, 3)
	want := play(t, h, 100, false)
	p, err := h.Rebuild(49, true, 10) // from the initial state, through tick 49
	require.NoError(t, err)
	assert.Equal(t, want[49], p.Hash())
	p, err = h.Rebuild(0, false, 10)
	require.NoError(t, err)
	require.NoError(t, h.Replay(p, 99, nil))
	assert.Equal(t, want[99], p.Hash())

	h = lockstep.NewHistory(chainFactory, 3)
	want = play(t, h, lockstep.MaxHistoryTicks+10, false)
	p, err = h.Rebuild(lockstep.MaxHistoryTicks-1, true, 10)
	require.NoError(t, err)
	assert.Equal(t, want[lockstep.MaxHistoryTicks-1], p.Hash())
	_, err = h.Rebuild(lockstep.MaxHistoryTicks, true, 10)
	assert.ErrorContains(t, err, "cannot snapshot", "forensics re-simulate from tick 0 only so far")
}

// TestASimWithoutSnapshotsHealsFromTheStartLongAfterForensicsStopped: the frames from
// tick 0 are kept by their size, not their ticks, so a long match still heals.
func TestASimWithoutSnapshotsHealsFromTheStartLongAfterForensicsStopped(t *testing.T) {
	noSnap := func() (sim.Sim, error) { s, err := chainFactory(); return struct{ sim.Sim }{s}, err }
	h := lockstep.NewHistory(noSnap, 3)
	want := play(t, h, 20*lockstep.MaxHistoryTicks, false) // 11 minutes of a 30 Hz match
	s, _ := noSnap()
	wrong := lockstep.NewPeer(s, lockstep.PeerOptions{Every: 10, FirstTick: 20 * lockstep.MaxHistoryTicks})
	after := uint64(19 * lockstep.MaxHistoryTicks)
	_, err := h.HealFromStart(wrong, after, want[after]^1)
	var wrongHash *lockstep.HealHashError
	require.ErrorAs(t, err, &wrongHash)
	q, err := h.HealFromStart(wrong, after, want[after])
	require.NoError(t, err)
	assert.Equal(t, want[len(want)-1], q.Hash())
	assert.Equal(t, wrong.Next(), q.Next())

	// Past MaxFramesFromStart the frames are dropped and the heal refused, not the memory
	// spent.
	h = lockstep.NewHistory(noSnap, 3)
	big := make([]byte, 64<<10)
	var tick uint64
	for ; tick <= uint64(lockstep.MaxFramesFromStart/len(big)); tick++ {
		h.Frame(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: big}}})
	}
	wrong = lockstep.NewPeer(s, lockstep.PeerOptions{Every: 10, FirstTick: tick})
	_, err = h.HealFromStart(wrong, 5, 0)
	require.ErrorIs(t, err, lockstep.ErrHealRefused)
	assert.ErrorContains(t, err, "no longer kept")
}

func TestHistoryKeepsCopiesOfTheFramesItIsGiven(t *testing.T) {
	h := lockstep.NewHistory(chainFactory, 2)
	payload := []byte{1, 2, 3}
	f := lockstep.Frame{Tick: 0, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: payload}}}
	h.Frame(f)
	want := hashchain.New(sim.Config{Seed: 3, Players: 2})
	want.Step(0, f.Commands)
	payload[0] = 9 // the caller reuses its buffer
	p, err := h.Rebuild(0, false, 10)
	require.NoError(t, err)
	require.NoError(t, h.Replay(p, 0, nil))
	assert.Equal(t, want.Hash(), p.Hash())
}

func TestLineHashIsFNV1a32(t *testing.T) {
	assert.Equal(t, uint32(0x811c9dc5), lockstep.LineHash(""))
	assert.Equal(t, uint32(0xe40c292c), lockstep.LineHash("a"))
}

// TestKeepingAFrameAllocatesNothingOnceTheArenasHaveGrown: History.Frame runs on every
// tick with commands, on every player.
func TestKeepingAFrameAllocatesNothingOnceTheArenasHaveGrown(t *testing.T) {
	s := hashchain.New(sim.Config{Seed: 3, Players: 2})
	h := lockstep.NewHistory(chainFactory, 2)
	payload := make([]byte, 24)
	f := lockstep.Frame{Commands: []sim.Command{{Player: 1, Seq: 1, Payload: payload}, {Player: 2, Seq: 1, Payload: payload}}}
	var tick uint64 // 600 ticks: snapshots dropped, the arenas at their size
	for tick < 600 {
		f.Tick = tick
		h.Frame(f)
		if tick%30 == 29 {
			h.Checkpoint(tick, s)
		}
		tick++
	}
	allocs := testing.AllocsPerRun(200, func() {
		f.Tick = tick
		h.Frame(f)
		tick++
	})
	assert.Zero(t, allocs, "between two checkpoints")
}

func BenchmarkHistoryFrame(b *testing.B) {
	s := hashchain.New(sim.Config{Seed: 3, Players: 2})
	h := lockstep.NewHistory(chainFactory, 0)
	payload := make([]byte, 24)
	f := lockstep.Frame{Commands: []sim.Command{{Player: 1, Seq: 1, Payload: payload}, {Player: 2, Seq: 1, Payload: payload}}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.Tick = uint64(i)
		h.Frame(f)
		if i%30 == 29 {
			h.Checkpoint(f.Tick, s)
		}
	}
}
