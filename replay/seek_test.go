package replay_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/replay"
)

func TestSeekingGivesTheSameStateAsPlayingThrough(t *testing.T) {
	rp, err := replay.Load(bytes.NewReader(record(t, 3, 3000)))
	require.NoError(t, err)

	// The reference: the hash after every tick, playing straight through.
	ref, err := replay.NewSeeker(rp, 0)
	require.NoError(t, err)
	hashes := make([]uint64, rp.Ticks+1)
	hashes[0] = ref.Sim().Hash()
	for !ref.Done() {
		f, err := ref.Step()
		require.NoError(t, err)
		hashes[f.Tick+1] = ref.Sim().Hash()
	}

	k, err := replay.NewSeeker(rp, 500)
	require.NoError(t, err)
	for _, next := range []uint64{2500, 100, 1999, 2000, 2001, 0, 3000, 700, 5000} {
		require.NoError(t, k.Seek(next))
		want := min(next, rp.Ticks)
		assert.Equal(t, want, k.Next(), "seek to %d", next)
		assert.Equal(t, hashes[want], k.Sim().Hash(), "state after seeking to %d", next)
	}
}

func TestDiffFindsTheFirstDivergentTick(t *testing.T) {
	a, err := replay.Load(bytes.NewReader(record(t, 1, 2000)))
	require.NoError(t, err)

	t.Run("a replay equals itself", func(t *testing.T) {
		b, err := replay.Load(bytes.NewReader(record(t, 1, 1500)))
		require.NoError(t, err)
		rep, err := replay.Diff(a, b, 0)
		require.NoError(t, err)
		assert.True(t, rep.Same)
		assert.Equal(t, uint64(1500), rep.Compared)
	})
	t.Run("changed inputs are found at their tick and blamed on the inputs", func(t *testing.T) {
		b, err := replay.Load(bytes.NewReader(record(t, 1, 2000)))
		require.NoError(t, err)
		// Drop the commands of one frame in B.
		victim := b.Frames[len(b.Frames)/2]
		b.Frames = append(b.Frames[:len(b.Frames)/2], b.Frames[len(b.Frames)/2+1:]...)
		rep, err := replay.Diff(a, b, 10)
		require.NoError(t, err)
		require.False(t, rep.Same)
		assert.Equal(t, victim.Tick, rep.Tick)
		assert.True(t, rep.InputsDiffer)
		assert.NotEqual(t, rep.HashA, rep.HashB)
		assert.NotEmpty(t, rep.Subsystems)
		assert.NotEmpty(t, rep.Lines)
		assert.LessOrEqual(t, len(rep.Lines), 10)
	})
	t.Run("another seed differs before tick 0", func(t *testing.T) {
		b, err := replay.Load(bytes.NewReader(record(t, 2, 100)))
		require.NoError(t, err)
		rep, err := replay.Diff(a, b, 0)
		require.NoError(t, err)
		assert.True(t, rep.Initial)
	})
}

func TestSummarizeCountsWhatTheFileHolds(t *testing.T) {
	var buf bytes.Buffer
	_, err := scripted.Record(&buf, scripted.RecordOptions{Options: scripted.Options{Seed: 1, Players: 4}, Ticks: 600})
	require.NoError(t, err)
	rp, err := replay.Load(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	s := replay.Summarize(rp)
	assert.Equal(t, uint64(600), s.Ticks)
	assert.Equal(t, s.Ticks, s.Frames+s.IdleTicks)
	total := 0
	for _, n := range s.PerPlayer {
		assert.Positive(t, n)
		total += n
	}
	assert.Equal(t, s.Commands, total)
	assert.Equal(t, 20, s.Checkpoints)
	assert.InDelta(t, 20.0, s.Seconds, 0.001)
}
