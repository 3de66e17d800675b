package replay

import pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"

// Summary is what `replay info` shows: a replay's shape without re-simulating it.
type Summary struct {
	Ticks uint64
	// Seconds is Ticks at the recorded tick rate.
	Seconds float64
	// Frames counts ticks with commands; IdleTicks the rest.
	Frames, IdleTicks uint64
	// Commands counts every command; PerPlayer[i] those of player i+1.
	Commands  int
	PerPlayer []int
	// PayloadBytes is the sum of command payload sizes.
	PayloadBytes int
	Checkpoints  int
	Desyncs      int
	Events       int
	// EventKinds counts the events of each kind: joins, leaves, drops, reconnects,
	// relay restarts, the start.
	EventKinds map[pb.Event_Kind]int
	// Restarts are the ticks at which a relay restarted the match (from its file).
	Restarts []uint64
	// Started is false for a match that never left its lobby (no ticks).
	Started bool
	// BytesPerTick is the file size divided by the ticks it covers.
	BytesPerTick float64
}

// Summarize counts what a replay holds.
func Summarize(rp *Replay) Summary {
	s := Summary{
		Ticks:       rp.Ticks,
		Frames:      uint64(len(rp.Frames)),
		PerPlayer:   make([]int, len(rp.Start.GetPlayers())),
		Checkpoints: len(rp.Checkpoints),
		Desyncs:     len(rp.Desyncs),
		Events:      len(rp.Events),
		EventKinds:  map[pb.Event_Kind]int{},
		Started:     rp.Started,
	}
	for _, e := range rp.Events {
		s.EventKinds[e.GetKind()]++
		if e.GetKind() == pb.Event_KIND_RELAY_RESTARTED {
			s.Restarts = append(s.Restarts, e.GetTick())
		}
	}
	s.IdleTicks = s.Ticks - s.Frames
	if rate := rp.Start.GetTickRate(); rate > 0 {
		s.Seconds = float64(s.Ticks) / float64(rate)
	}
	for _, f := range rp.Frames {
		s.Commands += len(f.Commands)
		for _, c := range f.Commands {
			s.PayloadBytes += len(c.Payload)
			if int(c.Player) <= len(s.PerPlayer) {
				s.PerPlayer[c.Player-1]++
			}
		}
	}
	if s.Ticks > 0 {
		s.BytesPerTick = float64(rp.Size) / float64(s.Ticks)
	}
	return s
}
