package lockstep

import (
	"fmt"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

// Defaults of ScheduleOptions.
const (
	// DefaultMaxLead is the default ScheduleOptions.MaxLead: 60 ticks, 2 s at 30 Hz.
	DefaultMaxLead = 60
	// DefaultMaxCommandsPerTick is the default ScheduleOptions.MaxCommandsPerTick.
	DefaultMaxCommandsPerTick = 8
	// DefaultMaxPayload is the default ScheduleOptions.MaxPayload, in bytes.
	DefaultMaxPayload = 256
	// MaxLeadLimit is the largest MaxLead a Schedule honours; larger values are clamped to
	// it. A Schedule keeps MaxLead+1 tick buckets, so the lead bounds its memory.
	MaxLeadLimit = 4096
)

// ScheduleOptions configures a Schedule. The zero value means every default.
type ScheduleOptions struct {
	// MaxLead is how far ahead of the last sealed tick a command may target, in ticks:
	// a target > lastSealed + MaxLead is rejected with TooFarAhead. Before the first Seal,
	// lastSealed counts as FirstTick-1, so targets FirstTick .. FirstTick+MaxLead-1 are
	// accepted. Put differently: at any time the open ticks are NextTick() ..
	// NextTick()+MaxLead-1. Zero or negative means DefaultMaxLead (60); values above
	// MaxLeadLimit (4096) are clamped to it.
	MaxLead int
	// MaxCommandsPerTick caps the commands one player may have in one tick. Zero or
	// negative means DefaultMaxCommandsPerTick (8).
	MaxCommandsPerTick int
	// MaxPayload caps the payload of one command, in bytes. Zero or negative means
	// DefaultMaxPayload (256).
	MaxPayload int
	// FirstTick is the first tick Seal closes, for resuming a match; default 0.
	FirstTick uint64
}

func (o ScheduleOptions) withDefaults() ScheduleOptions {
	if o.MaxLead <= 0 {
		o.MaxLead = DefaultMaxLead
	}
	if o.MaxLead > MaxLeadLimit {
		o.MaxLead = MaxLeadLimit
	}
	if o.MaxCommandsPerTick <= 0 {
		o.MaxCommandsPerTick = DefaultMaxCommandsPerTick
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	return o
}

// Schedule merges the commands of all players into one stream of sealed tick frames. It
// is the relay's core: Submit places a command into a tick, Seal closes the next tick and
// returns its frame in canonical (player, seq) order.
//
// A Schedule is not safe for concurrent use; one owner (the match actor) drives it.
type Schedule struct {
	opts ScheduleOptions
	// buckets is a ring of MaxLead+1 ticks: the MaxLead open ticks plus the last sealed
	// one, whose frame stays valid until the next Seal. Tick t lives in buckets[t % len].
	buckets []bucket
	// keys lists every pending command's (player, seq, tick), for the duplicate check.
	keys    []pendingKey
	next    uint64 // the tick the next Seal closes
	sealed  bool   // whether Seal was called at least once
	pending int
}

type bucket struct {
	cmds  []sim.Command // Payload is set at Seal time, from offs into arena
	offs  []int         // payload offset in arena, per command
	arena []byte        // the payload bytes of this tick, copied from the callers
}

type pendingKey struct {
	player, seq uint32
	tick        uint64
}

// NewSchedule returns a Schedule whose first Seal closes opts.FirstTick.
func NewSchedule(opts ScheduleOptions) *Schedule {
	opts = opts.withDefaults()
	return &Schedule{
		opts:    opts,
		buckets: make([]bucket, opts.MaxLead+1),
		next:    opts.FirstTick,
	}
}

// Options returns the options in effect, defaults filled in.
func (s *Schedule) Options() ScheduleOptions { return s.opts }

// NextTick returns the tick the next Seal closes: the first open tick.
func (s *Schedule) NextTick() uint64 { return s.next }

// LastSealed returns the last tick Seal closed; ok is false before the first Seal.
func (s *Schedule) LastSealed() (tick uint64, ok bool) {
	if !s.sealed {
		return 0, false
	}
	return s.next - 1, true
}

// Pending returns the number of accepted commands waiting in unsealed ticks.
func (s *Schedule) Pending() int { return s.pending }

// Submit places player's command seq, aimed at tick target, and returns the tick it got.
// A target already sealed (target < NextTick()) moves to NextTick(), the first open tick,
// or if the player has MaxCommandsPerTick commands there, to the first open tick where it
// has room; the relay acknowledges the command with the tick returned. The payload is copied, so
// the caller may reuse its buffer as soon as Submit returns.
//
// Submit refuses a command with a *RejectError (errors.Is(err, ErrRejected)), checking in
// this order: PayloadTooLarge (len(payload) > MaxPayload), TooFarAhead (target >
// lastSealed + MaxLead, see ScheduleOptions.MaxLead), DuplicateSeq (the same (player,
// seq) is still pending in any unsealed tick; a seq whose command was already sealed is
// not remembered), TooManyCommands (the player already has MaxCommandsPerTick commands in
// the tick it aimed at, or for a late command in every open tick). A refused command
// changes nothing.
//
// After warm-up (once each tick bucket has held its peak load) Submit allocates nothing.
// It costs O(pending commands) for the duplicate check.
func (s *Schedule) Submit(player, seq uint32, target uint64, payload []byte) (tick uint64, err error) {
	o := &s.opts
	if len(payload) > o.MaxPayload {
		return 0, s.reject(PayloadTooLarge, player, seq, target, fmt.Sprintf(
			"payload is %d bytes and the limit is %d; send a smaller command or split it",
			len(payload), o.MaxPayload))
	}
	tick = max(target, s.next)
	if tick-s.next >= uint64(o.MaxLead) {
		sealed := "no tick is sealed yet"
		if l, ok := s.LastSealed(); ok {
			sealed = fmt.Sprintf("the last sealed tick is %d", l)
		}
		return 0, s.reject(TooFarAhead, player, seq, target, fmt.Sprintf(
			"%s and the max lead is %d ticks, so the latest accepted target is %d; "+
				"target a tick closer to the last sealed tick", sealed, o.MaxLead, s.next+uint64(o.MaxLead)-1))
	}
	for _, k := range s.keys {
		if k.player == player && k.seq == seq {
			return 0, s.reject(DuplicateSeq, player, seq, target, fmt.Sprintf(
				"a command with this seq is already pending in tick %d; use a new seq for every command", k.tick))
		}
	}
	if n := s.commandsOf(player, tick); n >= o.MaxCommandsPerTick {
		if target >= s.next {
			return 0, s.reject(TooManyCommands, player, seq, target, fmt.Sprintf(
				"the player already has %d commands in tick %d, the limit per tick; "+
					"send fewer commands or merge them into one", n, tick))
		}
		// A late command aimed at no open tick in particular: it takes the first one where
		// the player has room, so what a stalled link held back lands, in order, rather
		// than all but the first few being refused by the first open tick's cap.
		for tick++; tick-s.next < uint64(o.MaxLead) && s.commandsOf(player, tick) >= o.MaxCommandsPerTick; tick++ {
		}
		if tick-s.next >= uint64(o.MaxLead) {
			return 0, s.reject(TooManyCommands, player, seq, target, fmt.Sprintf(
				"the player already has %d commands in every open tick (%d to %d), the limit per tick; "+
					"send fewer commands or merge them into one", o.MaxCommandsPerTick, s.next, tick-1))
		}
	}
	b := &s.buckets[tick%uint64(len(s.buckets))]
	b.offs = append(b.offs, len(b.arena))
	b.arena = append(b.arena, payload...)
	b.cmds = append(b.cmds, sim.Command{Player: player, Seq: seq})
	s.keys = append(s.keys, pendingKey{player: player, seq: seq, tick: tick})
	s.pending++
	return tick, nil
}

// commandsOf counts player's commands in the open tick.
func (s *Schedule) commandsOf(player uint32, tick uint64) int {
	b := &s.buckets[tick%uint64(len(s.buckets))]
	n := 0
	for i := range b.cmds {
		if b.cmds[i].Player == player {
			n++
		}
	}
	return n
}

func (s *Schedule) reject(r RejectReason, player, seq uint32, target uint64, detail string) error {
	return &RejectError{Reason: r, Player: player, Seq: seq, Target: target, Detail: detail}
}

// Seal closes tick NextTick() and returns its frame, the commands sorted by (player,
// seq). The order is canonical: the same commands give the same frame whatever order
// they were submitted in. A tick with no commands gives a frame with nil Commands.
//
// The frame's Commands slice and every Payload in it are owned by the Schedule and valid
// only until the next call to Seal: encode or Clone the frame before that. After warm-up
// Seal allocates nothing.
func (s *Schedule) Seal() Frame {
	n := uint64(len(s.buckets))
	if s.sealed {
		// The previous frame's bucket is free again: it becomes the furthest open tick.
		prev := &s.buckets[(s.next-1)%n]
		prev.cmds = prev.cmds[:0]
		prev.offs = prev.offs[:0]
		prev.arena = prev.arena[:0]
	}
	tick := s.next
	b := &s.buckets[tick%n]
	s.next++
	s.sealed = true
	if len(b.cmds) == 0 {
		return Frame{Tick: tick}
	}
	for i := range b.cmds {
		start := b.offs[i]
		end := len(b.arena)
		if i+1 < len(b.offs) {
			end = b.offs[i+1]
		}
		if start == end {
			b.cmds[i].Payload = nil
		} else {
			// Full slice expression: a caller appending to one payload cannot overwrite
			// the next.
			b.cmds[i].Payload = b.arena[start:end:end]
		}
	}
	slices.SortFunc(b.cmds, compareCommands)
	s.pending -= len(b.cmds)
	s.keys = slices.DeleteFunc(s.keys, func(k pendingKey) bool { return k.tick == tick })
	return Frame{Tick: tick, Commands: b.cmds}
}
