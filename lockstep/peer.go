package lockstep

import (
	"fmt"

	"github.com/tickrelay/tickrelay/sim"
)

// PeerOptions configures a Peer. The zero value means every default.
type PeerOptions struct {
	// Every is the checksum cadence in ticks: a checksum is due after every tick t with
	// IsCheckpoint(t, Every). Zero means DefaultChecksumEvery (30).
	Every uint64
	// FirstTick is the first tick the Peer applies; default 0. A Peer resuming a match at
	// a later tick needs a sim already in the state after tick FirstTick-1 (restored from
	// a snapshot).
	FirstTick uint64
}

// MaxTick is the last tick a match may have: 2^53-1, the largest integer a JavaScript
// number holds exactly, so every reader counts ticks exactly (at 60 Hz it is 4.7 million
// years away). A stream that reaches past it is damaged; a Peer refuses it (so a tick
// count never wraps).
const MaxTick = 1<<53 - 1

// Checksum is a peer's digest of its simulation state after it applied tick Tick.
type Checksum struct {
	Tick uint64
	Hash uint64
}

// Peer applies sealed frames to a Sim, strictly in tick order. It is the single
// chokepoint through which commands reach a simulation: nothing else may call Sim.Step.
//
// A Peer is not safe for concurrent use.
type Peer struct {
	s     sim.Sim
	fail  sim.Failer // s, when it can fail
	every uint64
	next  uint64
}

// NewPeer returns a Peer driving s, expecting tick opts.FirstTick first.
func NewPeer(s sim.Sim, opts PeerOptions) *Peer {
	if opts.Every == 0 {
		opts.Every = DefaultChecksumEvery
	}
	fail, _ := s.(sim.Failer)
	return &Peer{s: s, fail: fail, every: opts.Every, next: opts.FirstTick}
}

// Next returns the tick the Peer applies next.
func (p *Peer) Next() uint64 { return p.next }

// Sim returns the simulation the Peer drives. Read it between calls; never Step it.
func (p *Peer) Sim() sim.Sim { return p.s }

// Hash returns the simulation's current state hash.
func (p *Peer) Hash() uint64 { return p.s.Hash() }

// Every returns the checksum cadence in effect.
func (p *Peer) Every() uint64 { return p.every }

// Apply steps the simulation with f if f.Tick is the tick expected next. A frame past it
// gives a *GapError (frames were lost: fetch them), a frame already applied a
// *RepeatError (drop it); on those errors nothing is applied. A sim that fails while
// stepping f (sim.Failer) gives an error wrapping ErrSimFailed and the sim's. After stepping a checkpoint tick
// (IsCheckpoint(f.Tick, Every)), Apply returns the state's checksum with report true: the
// caller sends it to the relay.
//
// Apply does not keep f: the frame's buffers may be reused once it returns.
func (p *Peer) Apply(f Frame) (c Checksum, report bool, err error) {
	switch {
	case f.Tick > MaxTick:
		return Checksum{}, false, fmt.Errorf("%w: frame for tick %d, past %d", ErrPastMaxTick, f.Tick, uint64(MaxTick))
	case f.Tick > p.next:
		return Checksum{}, false, &GapError{Want: p.next, Got: f.Tick}
	case f.Tick < p.next:
		return Checksum{}, false, &RepeatError{Want: p.next, Got: f.Tick}
	}
	return p.step(f.Tick, f.Commands)
}

// ApplyIdle steps the empty ticks Next()..through, as a replay's run of idle ticks
// codes them, calling emit (if not nil) with the checksum of every checkpoint tick among
// them, in order. A through below Next() gives a *RepeatError and applies nothing; a sim
// that fails (sim.Failer) stops it with the sim's error.
func (p *Peer) ApplyIdle(through uint64, emit func(Checksum)) error {
	if through > MaxTick {
		return fmt.Errorf("%w: idle through tick %d, past %d", ErrPastMaxTick, through, uint64(MaxTick))
	}
	if through < p.next {
		return &RepeatError{Want: p.next, Got: through}
	}
	for {
		t := p.next
		c, report, err := p.step(t, nil)
		if err != nil {
			return err
		}
		if report && emit != nil {
			emit(c)
		}
		if t == through {
			return nil
		}
	}
}

func (p *Peer) step(tick uint64, cmds []sim.Command) (Checksum, bool, error) {
	p.s.Step(tick, cmds)
	p.next = tick + 1
	if p.fail != nil {
		if err := p.fail.Err(); err != nil {
			return Checksum{}, false, fmt.Errorf("%w at tick %d: %w", ErrSimFailed, tick, err)
		}
	}
	if !IsCheckpoint(tick, p.every) {
		return Checksum{}, false, nil
	}
	h, err := sim.HashOf(p.s)
	if err != nil {
		return Checksum{}, false, fmt.Errorf("%w hashing tick %d: %w", ErrSimFailed, tick, err)
	}
	return Checksum{Tick: tick, Hash: h}, true, nil
}

// Restore puts p's sim in the state that state (its sim.Snapshotter's snapshot) describes,
// the state after tick after, and makes after+1 the tick p applies next: the peer goes on
// from there. It is the one way a peer's sim jumps, as Apply is the one way it steps.
func (p *Peer) Restore(state []byte, after uint64) error {
	sn, ok := p.s.(sim.Snapshotter)
	if !ok {
		return fmt.Errorf("the sim cannot restore a snapshot (it is not a sim.Snapshotter)")
	}
	if after >= MaxTick {
		return fmt.Errorf("%w: a state after tick %d", ErrPastMaxTick, after)
	}
	return p.restore(sn, state, after+1)
}

// restore puts the sim in state, with next the tick it applies next (0: the state before
// tick 0, which Restore cannot name).
func (p *Peer) restore(sn sim.Snapshotter, state []byte, next uint64) error {
	if err := sn.Restore(state); err != nil {
		return fmt.Errorf("restoring the state before tick %d: %w", next, err)
	}
	p.next = next
	return nil
}
