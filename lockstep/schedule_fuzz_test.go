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
		m := &scheduleModel{t: t, opts: opts, s: NewSchedule(opts), want: map[uint64][]sim.Command{}, pendingAt: map[modelKey]uint64{}, next: opts.FirstTick}
		buf := make([]byte, 0, 16)
		for len(r.b) > 0 {
			if m.s.Pending() != len(m.pendingAt) {
				t.Fatalf("Pending() = %d, model has %d", m.s.Pending(), len(m.pendingAt))
			}
			op := r.byte()
			if op%4 == 0 {
				m.seal()
				continue
			}
			player := 1 + uint32(r.byte()%4)
			seq := uint32(r.byte() % 8)
			off := uint64(r.byte() % uint8(opts.MaxLead+4))
			target := max(m.next+off, 2) - 2 // from two ticks late to a few past the lead
			size := int(r.byte()) % (opts.MaxPayload + 3)
			buf = buf[:size]
			for i := range buf {
				buf[i] = r.byte()
			}
			m.submit(player, seq, target, buf)
		}

		// Flush: every accepted command must come out exactly once.
		for range opts.MaxLead {
			m.seal()
		}
		if m.s.Pending() != 0 || len(m.want) != 0 || len(m.pendingAt) != 0 {
			t.Fatalf("after flushing: %d pending in the schedule, model still holds %v", m.s.Pending(), m.want)
		}
	})
}

type modelKey struct{ player, seq uint32 }

// scheduleModel is a Schedule beside a plain model of its documented rules.
type scheduleModel struct {
	t         *testing.T
	opts      ScheduleOptions
	s         *Schedule
	want      map[uint64][]sim.Command // accepted commands per open tick
	pendingAt map[modelKey]uint64      // tick of each pending (player, seq)
	next      uint64                   // the next tick to seal
}

// seal seals the next tick and holds its frame to the model and the invariants.
func (m *scheduleModel) seal() {
	t := m.t
	frame := m.s.Seal()
	if frame.Tick != m.next {
		t.Fatalf("sealed tick %d, want %d: frames must be consecutive", frame.Tick, m.next)
	}
	if !frame.Canonical() {
		t.Fatalf("tick %d: commands not strictly sorted by (player, seq): %v", frame.Tick, frame.Commands)
	}
	perPlayer := map[uint32]int{}
	for _, c := range frame.Commands {
		perPlayer[c.Player]++
		if perPlayer[c.Player] > m.opts.MaxCommandsPerTick {
			t.Fatalf("tick %d: player %d has more than %d commands", frame.Tick, c.Player, m.opts.MaxCommandsPerTick)
		}
	}
	exp := m.want[m.next]
	slices.SortFunc(exp, compareCommands)
	if len(exp) == 0 && frame.Commands != nil {
		t.Fatalf("tick %d: idle tick has non-nil commands", frame.Tick)
	}
	if len(exp) != len(frame.Commands) {
		t.Fatalf("tick %d: got %d commands %v, want %d %v", m.next, len(frame.Commands), frame.Commands, len(exp), exp)
	}
	for i, c := range frame.Commands {
		e := exp[i]
		if c.Player != e.Player || c.Seq != e.Seq || string(c.Payload) != string(e.Payload) {
			t.Fatalf("tick %d command %d: got %+v, want %+v", m.next, i, c, e)
		}
		delete(m.pendingAt, modelKey{c.Player, c.Seq})
	}
	delete(m.want, m.next)
	m.next++
}

// decide is the model's verdict on a command, in the documented order of checks: the
// tick it goes to, or why it is rejected.
func (m *scheduleModel) decide(player, seq uint32, target uint64, size int) (uint64, RejectReason) {
	tick := max(target, m.next)
	full := func(t uint64) bool {
		count := 0
		for _, c := range m.want[t] {
			if c.Player == player {
				count++
			}
		}
		return count >= m.opts.MaxCommandsPerTick
	}
	_, dup := m.pendingAt[modelKey{player, seq}]
	switch {
	case size > m.opts.MaxPayload:
		return tick, PayloadTooLarge
	case tick-m.next >= uint64(m.opts.MaxLead):
		return tick, TooFarAhead
	case dup:
		return tick, DuplicateSeq
	case full(tick) && target >= m.next:
		return tick, TooManyCommands
	}
	// A late command takes the first open tick where the player has room, if any.
	for full(tick) {
		if tick++; tick-m.next >= uint64(m.opts.MaxLead) {
			return tick, TooManyCommands
		}
	}
	return tick, 0
}

// submit submits a command to the schedule and holds the answer to the model's.
func (m *scheduleModel) submit(player, seq uint32, target uint64, buf []byte) {
	t := m.t
	tick, reason := m.decide(player, seq, target, len(buf))
	got, err := m.s.Submit(player, seq, target, buf)
	if reason != 0 {
		var re *RejectError
		if !errors.As(err, &re) || !errors.Is(err, ErrRejected) {
			t.Fatalf("submit (%d, %d, target %d): got %d, %v; want a %v rejection", player, seq, target, got, err, reason)
		}
		if re.Reason != reason {
			t.Fatalf("submit (%d, %d, target %d): rejected for %v, want %v", player, seq, target, re.Reason, reason)
		}
		return
	}
	if err != nil {
		t.Fatalf("submit (%d, %d, target %d): %v", player, seq, target, err)
	}
	if got != tick || got < target && target >= m.next {
		t.Fatalf("submit (%d, %d, target %d): placed in tick %d, want %d", player, seq, target, got, tick)
	}
	m.want[tick] = append(m.want[tick], sim.Command{Player: player, Seq: seq, Payload: slices.Clone(buf)})
	m.pendingAt[modelKey{player, seq}] = tick
	for i := range buf {
		buf[i] ^= 0xFF // the caller reuses its buffer: the schedule must have copied it
	}
}
