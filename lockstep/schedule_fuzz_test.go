package lockstep

import (
	"errors"
	"slices"
	"testing"

	"github.com/tickrelay/tickrelay/sim"
)

// fuzzReader hands out fuzz bytes, then zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// FuzzSchedule drives a Schedule with a random sequence of Submit and Seal calls and
// checks it against a plain model of the documented rules, and every frame against the
// invariants: accepted commands appear exactly once, in the tick Submit returned (never
// before their target), frames are consecutive and sorted by (player, seq), rejected
// commands never appear, and no player exceeds the per-tick cap.
func FuzzSchedule(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{3, 1, 4, 1, 1, 5, 9, 2, 6, 0, 5, 3, 5, 8, 9, 7, 0, 9, 3, 2, 3, 8, 4, 6, 0})
	f.Add([]byte{7, 2, 7, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4})
	f.Add([]byte{1, 0, 2, 3, 2, 200, 7, 3, 9, 6, 200, 7, 3, 9, 4, 0, 4, 0, 2, 13, 1, 255, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{b: data}
		opts := ScheduleOptions{
			MaxLead:            1 + int(r.byte()%8),
			MaxCommandsPerTick: 1 + int(r.byte()%3),
			MaxPayload:         1 + int(r.byte()%8),
			FirstTick:          uint64(r.byte() % 4),
		}
		s := NewSchedule(opts)

		type key struct{ player, seq uint32 }
		want := map[uint64][]sim.Command{} // the model: accepted commands per open tick
		pendingAt := map[key]uint64{}      // the model: tick of each pending (player, seq)
		next := opts.FirstTick
		buf := make([]byte, 0, 16)

		seal := func() {
			frame := s.Seal()
			if frame.Tick != next {
				t.Fatalf("sealed tick %d, want %d: frames must be consecutive", frame.Tick, next)
			}
			if !frame.Canonical() {
				t.Fatalf("tick %d: commands not strictly sorted by (player, seq): %v", frame.Tick, frame.Commands)
			}
			perPlayer := map[uint32]int{}
			for _, c := range frame.Commands {
				perPlayer[c.Player]++
				if perPlayer[c.Player] > opts.MaxCommandsPerTick {
					t.Fatalf("tick %d: player %d has more than %d commands", frame.Tick, c.Player, opts.MaxCommandsPerTick)
				}
			}
			exp := want[next]
			slices.SortFunc(exp, compareCommands)
			if len(exp) == 0 && frame.Commands != nil {
				t.Fatalf("tick %d: idle tick has non-nil commands", frame.Tick)
			}
			if len(exp) != len(frame.Commands) {
				t.Fatalf("tick %d: got %d commands %v, want %d %v", next, len(frame.Commands), frame.Commands, len(exp), exp)
			}
			for i, c := range frame.Commands {
				e := exp[i]
				if c.Player != e.Player || c.Seq != e.Seq || string(c.Payload) != string(e.Payload) {
					t.Fatalf("tick %d command %d: got %+v, want %+v", next, i, c, e)
				}
				delete(pendingAt, key{c.Player, c.Seq})
			}
			delete(want, next)
			next++
		}

		for len(r.b) > 0 {
			if s.Pending() != len(pendingAt) {
				t.Fatalf("Pending() = %d, model has %d", s.Pending(), len(pendingAt))
			}
			op := r.byte()
			if op%4 == 0 {
				seal()
				continue
			}
			player := 1 + uint32(r.byte()%4)
			seq := uint32(r.byte() % 8)
			off := uint64(r.byte() % uint8(opts.MaxLead+4))
			target := max(next+off, 2) - 2 // from two ticks late to a few past the lead
			size := int(r.byte()) % (opts.MaxPayload + 3)
			buf = buf[:size]
			for i := range buf {
				buf[i] = r.byte()
			}

			// The model's decision, in the documented order of checks.
			tick := max(target, next)
			var reason RejectReason
			count := 0
			for _, c := range want[tick] {
				if c.Player == player {
					count++
				}
			}
			_, dup := pendingAt[key{player, seq}]
			switch {
			case size > opts.MaxPayload:
				reason = PayloadTooLarge
			case tick-next >= uint64(opts.MaxLead):
				reason = TooFarAhead
			case dup:
				reason = DuplicateSeq
			case count >= opts.MaxCommandsPerTick:
				reason = TooManyCommands
			}

			got, err := s.Submit(player, seq, target, buf)
			if reason != 0 {
				var re *RejectError
				if !errors.As(err, &re) || !errors.Is(err, ErrRejected) {
					t.Fatalf("submit (%d, %d, target %d): got %d, %v; want a %v rejection", player, seq, target, got, err, reason)
				}
				if re.Reason != reason {
					t.Fatalf("submit (%d, %d, target %d): rejected for %v, want %v", player, seq, target, re.Reason, reason)
				}
				continue
			}
			if err != nil {
				t.Fatalf("submit (%d, %d, target %d): %v", player, seq, target, err)
			}
			if got != tick || got < target && target >= next {
				t.Fatalf("submit (%d, %d, target %d): placed in tick %d, want %d", player, seq, target, got, tick)
			}
			want[tick] = append(want[tick], sim.Command{Player: player, Seq: seq, Payload: slices.Clone(buf)})
			pendingAt[key{player, seq}] = tick
			for i := range buf {
				buf[i] ^= 0xFF // the caller reuses its buffer: the schedule must have copied it
			}
		}

		// Flush: every accepted command must come out exactly once.
		for range opts.MaxLead {
			seal()
		}
		if s.Pending() != 0 || len(want) != 0 || len(pendingAt) != 0 {
			t.Fatalf("after flushing: %d pending in the schedule, model still holds %v", s.Pending(), want)
		}
	})
}
