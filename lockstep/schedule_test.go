package lockstep

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

// sealThrough seals until tick is sealed and returns a deep copy of every frame.
func sealThrough(t *testing.T, s *Schedule, tick uint64) []Frame {
	t.Helper()
	var out []Frame
	for s.NextTick() <= tick {
		out = append(out, s.Seal().Clone())
	}
	return out
}

func TestScheduleSubmitPlacesCommands(t *testing.T) {
	tests := []struct {
		name     string
		sealed   uint64 // seal ticks 0..sealed-1 before submitting
		target   uint64
		wantTick uint64
	}{
		{"a command for an open tick goes into that tick", 0, 3, 3},
		{"a command for the next tick goes into it", 5, 5, 5},
		{"a command for the last sealed tick moves to the next open tick", 5, 4, 5},
		{"a command for a long-sealed tick moves to the next open tick", 10, 0, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSchedule(ScheduleOptions{})
			for range tt.sealed {
				s.Seal()
			}
			tick, err := s.Submit(1, 1, tt.target, []byte("go"))
			require.NoError(t, err)
			assert.Equal(t, tt.wantTick, tick)
			assert.Equal(t, 1, s.Pending())

			frames := sealThrough(t, s, tick)
			last := frames[len(frames)-1]
			assert.Equal(t, tick, last.Tick)
			assert.Equal(t, []sim.Command{{Player: 1, Seq: 1, Payload: []byte("go")}}, last.Commands)
			for _, f := range frames[:len(frames)-1] {
				assert.Empty(t, f.Commands, "tick %d", f.Tick)
			}
			assert.Equal(t, 0, s.Pending())
		})
	}
}

func TestScheduleMaxLead(t *testing.T) {
	tests := []struct {
		name    string
		sealed  uint64 // number of ticks sealed first
		first   uint64
		target  uint64
		wantErr bool
	}{
		{"before the first seal the last target allowed is MaxLead-1", 0, 0, 9, false},
		{"before the first seal a target of MaxLead is too far ahead", 0, 0, 10, true},
		{"a target exactly MaxLead past the last sealed tick is accepted", 5, 0, 4 + 10, false},
		{"a target one past the limit is rejected", 5, 0, 4 + 11, true},
		{"with a first tick the limit counts from it", 0, 100, 109, false},
		{"with a first tick one past the limit is rejected", 0, 100, 110, true},
		{"a huge target does not overflow into acceptance", 3, 0, ^uint64(0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSchedule(ScheduleOptions{MaxLead: 10, FirstTick: tt.first})
			for range tt.sealed {
				s.Seal()
			}
			tick, err := s.Submit(2, 7, tt.target, nil)
			if !tt.wantErr {
				require.NoError(t, err)
				assert.Equal(t, tt.target, tick)
				return
			}
			var re *RejectError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, ErrRejected)
			assert.Equal(t, TooFarAhead, re.Reason)
			assert.Equal(t, uint32(2), re.Player)
			assert.Equal(t, uint32(7), re.Seq)
			assert.Equal(t, tt.target, re.Target)
			assert.Contains(t, err.Error(), "too far ahead")
			assert.Contains(t, err.Error(), "target a tick closer")
			assert.Equal(t, 0, s.Pending())
		})
	}
}

func TestScheduleCaps(t *testing.T) {
	t.Run("a player may put MaxCommandsPerTick commands into a tick and no more", func(t *testing.T) {
		s := NewSchedule(ScheduleOptions{MaxCommandsPerTick: 2})
		_, err := s.Submit(1, 1, 3, nil)
		require.NoError(t, err)
		_, err = s.Submit(1, 2, 3, nil)
		require.NoError(t, err)
		_, err = s.Submit(1, 3, 3, nil)
		var re *RejectError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, TooManyCommands, re.Reason)
		assert.Contains(t, err.Error(), "send fewer commands")

		_, err = s.Submit(2, 1, 3, nil)
		assert.NoError(t, err, "another player has its own cap")
		_, err = s.Submit(1, 3, 4, nil)
		assert.NoError(t, err, "the next tick has its own cap")
	})
	t.Run("late commands move on to the first open ticks where the player has room, in order", func(t *testing.T) {
		// A player whose link stalled sends what it held back all at once, aimed at ticks
		// now sealed: none is lost to the cap of the first open tick.
		s := NewSchedule(ScheduleOptions{MaxCommandsPerTick: 2, MaxLead: 4})
		for range 5 {
			s.Seal()
		}
		_, err := s.Submit(1, 1, 5, nil) // on time, in the first open tick
		require.NoError(t, err)
		var got []uint64
		for seq := uint32(2); seq <= 6; seq++ {
			tick, err := s.Submit(1, seq, 1, nil)
			require.NoError(t, err, "late command %d", seq)
			got = append(got, tick)
		}
		assert.Equal(t, []uint64{5, 6, 6, 7, 7}, got)
		_, err = s.Submit(2, 1, 5, nil)
		assert.NoError(t, err, "another player has its own cap")
		_, err = s.Submit(1, 7, 6, nil)
		var re *RejectError
		require.ErrorAs(t, err, &re, "a command aimed at a full tick is still refused")
		assert.Equal(t, TooManyCommands, re.Reason)
		for seq := uint32(7); seq <= 8; seq++ {
			tick, err := s.Submit(1, seq, 0, nil)
			require.NoError(t, err)
			assert.Equal(t, uint64(8), tick, "the last open tick")
		}
		_, err = s.Submit(1, 9, 0, nil)
		require.ErrorAs(t, err, &re, "every open tick full: refused, never past the max lead")
		assert.Equal(t, TooManyCommands, re.Reason)
		assert.Contains(t, err.Error(), "every open tick")
	})
	t.Run("a payload of exactly MaxPayload bytes is accepted and one byte more is not", func(t *testing.T) {
		s := NewSchedule(ScheduleOptions{MaxPayload: 4})
		_, err := s.Submit(1, 1, 0, make([]byte, 4))
		require.NoError(t, err)
		_, err = s.Submit(1, 2, 0, make([]byte, 5))
		var re *RejectError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, PayloadTooLarge, re.Reason)
		assert.Contains(t, err.Error(), "5 bytes and the limit is 4")
	})
	t.Run("zero options mean the documented defaults", func(t *testing.T) {
		o := NewSchedule(ScheduleOptions{}).Options()
		assert.Equal(t, ScheduleOptions{MaxLead: 60, MaxCommandsPerTick: 8, MaxPayload: 256}, o)
	})
	t.Run("a max lead past the limit is clamped", func(t *testing.T) {
		o := NewSchedule(ScheduleOptions{MaxLead: 1 << 30}).Options()
		assert.Equal(t, MaxLeadLimit, o.MaxLead)
	})
}

func TestScheduleDuplicateSeq(t *testing.T) {
	tests := []struct {
		name          string
		first, second uint64 // targets
		sealBetween   bool
		wantErr       bool
	}{
		{"the same seq twice in one tick is rejected", 3, 3, false, true},
		{"the same seq pending in another tick is rejected", 3, 5, false, true},
		{"a seq may be used again once its command is sealed", 0, 4, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSchedule(ScheduleOptions{})
			_, err := s.Submit(1, 9, tt.first, []byte{1})
			require.NoError(t, err)
			if tt.sealBetween {
				s.Seal()
			}
			_, err = s.Submit(1, 9, tt.second, []byte{2})
			if !tt.wantErr {
				assert.NoError(t, err)
				return
			}
			var re *RejectError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, DuplicateSeq, re.Reason)
			assert.Contains(t, err.Error(), "already pending in tick 3")
			_, err = s.Submit(2, 9, tt.second, nil)
			assert.NoError(t, err, "another player's seq is its own")
		})
	}
}

func TestScheduleCanonicalOrder(t *testing.T) {
	type sub struct {
		player, seq uint32
		target      uint64
	}
	var subs []sub
	for p := uint32(1); p <= 4; p++ {
		for q := uint32(0); q < 3; q++ {
			subs = append(subs, sub{p, 100 - q*7 + p, uint64(q % 2)})
		}
	}
	run := func(order []sub) []Frame {
		s := NewSchedule(ScheduleOptions{})
		for _, c := range order {
			_, err := s.Submit(c.player, c.seq, c.target, []byte{byte(c.player), byte(c.seq)})
			require.NoError(t, err)
		}
		return sealThrough(t, s, 1)
	}
	want := run(subs)
	require.Len(t, want, 2)
	require.Len(t, want[0].Commands, 8)
	require.Len(t, want[1].Commands, 4)
	for _, f := range want {
		require.True(t, f.Canonical(), "tick %d is sorted by (player, seq)", f.Tick)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		order := append([]sub(nil), subs...)
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		assert.Equal(t, want, run(order), "shuffle %d gives identical frames", i)
	}
}

func TestSchedulePayloadIsCopied(t *testing.T) {
	s := NewSchedule(ScheduleOptions{})
	buf := []byte("attack")
	_, err := s.Submit(1, 1, 0, buf)
	require.NoError(t, err)
	copy(buf, "retreat")
	_, err = s.Submit(2, 1, 0, buf)
	require.NoError(t, err)
	buf[0] = 'X'

	f := s.Seal()
	require.Len(t, f.Commands, 2)
	assert.Equal(t, "attack", string(f.Commands[0].Payload))
	assert.Equal(t, "retrea", string(f.Commands[1].Payload))

	// Appending to one payload must not overwrite its neighbour in the arena.
	_ = append(f.Commands[0].Payload, '!')
	assert.Equal(t, "retrea", string(f.Commands[1].Payload))
}

func TestScheduleEmptyPayloadIsNil(t *testing.T) {
	s := NewSchedule(ScheduleOptions{})
	_, err := s.Submit(1, 1, 0, []byte{})
	require.NoError(t, err)
	f := s.Seal()
	require.Len(t, f.Commands, 1)
	assert.Nil(t, f.Commands[0].Payload)
}

func TestScheduleFirstTick(t *testing.T) {
	s := NewSchedule(ScheduleOptions{FirstTick: 1000})
	_, ok := s.LastSealed()
	assert.False(t, ok, "nothing is sealed before the first Seal")
	assert.Equal(t, uint64(1000), s.NextTick())

	tick, err := s.Submit(1, 1, 5, []byte("late"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1000), tick, "a target before the first tick moves to it")

	f := s.Seal()
	assert.Equal(t, uint64(1000), f.Tick)
	assert.Len(t, f.Commands, 1)
	last, ok := s.LastSealed()
	assert.True(t, ok)
	assert.Equal(t, uint64(1000), last)
	assert.Equal(t, uint64(1001), s.NextTick())
}

func TestScheduleFrameStaysValidUntilNextSeal(t *testing.T) {
	s := NewSchedule(ScheduleOptions{MaxLead: 2})
	_, err := s.Submit(1, 1, 0, []byte("zero"))
	require.NoError(t, err)
	f := s.Seal()
	// With the ring fully used, none of these may land in tick 0's bucket.
	_, err = s.Submit(1, 2, 1, []byte("one!"))
	require.NoError(t, err)
	_, err = s.Submit(1, 3, 2, []byte("two!"))
	require.NoError(t, err)
	assert.Equal(t, "zero", string(f.Commands[0].Payload))
}

func TestRejectErrorUnwraps(t *testing.T) {
	err := error(&RejectError{Reason: DuplicateSeq, Player: 1, Seq: 2, Target: 3, Detail: "use a new seq"})
	assert.True(t, errors.Is(err, ErrRejected))
	assert.Equal(t, "lockstep: command rejected: duplicate seq (player 1, seq 2, target tick 3): use a new seq", err.Error())
}

func TestScheduleSteadyStateAllocatesNothing(t *testing.T) {
	round := warmRound(t)
	assert.Zero(t, testing.AllocsPerRun(1000, round))
}

func TestScheduleRejectionsSayWhatToDo(t *testing.T) {
	s := NewSchedule(ScheduleOptions{MaxLead: 10})
	_, err := s.Submit(1, 1, 10, nil)
	require.Error(t, err)
	assert.Equal(t, "lockstep: command rejected: too far ahead (player 1, seq 1, target tick 10): "+
		"no tick is sealed yet and the max lead is 10 ticks, so the latest accepted target is 9; "+
		"target a tick closer to the last sealed tick", err.Error())
	s.Seal()
	_, err = s.Submit(1, 1, 11, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the last sealed tick is 0 and the max lead is 10 ticks, so the latest accepted target is 10")
}

func TestFrameCloneOutlivesTheNextSeal(t *testing.T) {
	s := NewSchedule(ScheduleOptions{MaxLead: 1})
	_, err := s.Submit(1, 1, 0, []byte("keep"))
	require.NoError(t, err)
	_, err = s.Submit(2, 1, 0, nil)
	require.NoError(t, err)
	kept := s.Seal().Clone()
	for seq := uint32(2); seq < 10; seq++ {
		_, err = s.Submit(1, seq, 0, []byte("over"))
		require.NoError(t, err)
		s.Seal()
	}
	assert.Equal(t, Frame{Tick: 0, Commands: []sim.Command{
		{Player: 1, Seq: 1, Payload: []byte("keep")},
		{Player: 2, Seq: 1},
	}}, kept)
	assert.Equal(t, Frame{Tick: 3}, Frame{Tick: 3}.Clone())
}
