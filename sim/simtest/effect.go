package simtest

import (
	"fmt"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

// Effect is how many of a check's commands the sim applied: those that changed its
// state. A check whose commands change nothing never reached the sim's game code (a
// strict decoder refuses every garbage payload), so it cannot have caught a bug there.
type Effect struct {
	// Commands is how many commands the check stepped; Samples how many of them carried
	// one of Options.Payload's payloads (the sim's own), the rest being garbage.
	Commands, Samples int
	// Changed is how many commands changed the state: stepping their tick without them
	// gives another hash. SamplesChanged is how many of those were samples.
	Changed, SamplesChanged int
	// Exact is false for a sim without snapshots: it cannot be stepped twice from one
	// state, so Changed is only 0 (no command ever changed the hash, against an
	// instance given none) or Commands (some did).
	Exact bool
}

// Low says whether (next to) nothing the check sent changed the state: under 1 in 100
// commands. The check's other properties then say little about the sim's game.
func (e Effect) Low() bool { return e.Commands > 0 && e.Changed*100 < e.Commands }

func (e Effect) String() string {
	samples := "all garbage"
	if e.Samples > 0 {
		samples = fmt.Sprintf("%d sample payloads, the rest garbage", e.Samples)
		if e.Exact {
			samples = fmt.Sprintf("%d of %d sample payloads, %d of %d garbage", e.SamplesChanged, e.Samples, e.Changed-e.SamplesChanged, e.Commands-e.Samples)
		}
	}
	switch {
	case e.Exact:
		return fmt.Sprintf("%d of %d commands changed the state (%s)", e.Changed, e.Commands, samples)
	case e.Changed == 0:
		return fmt.Sprintf("none of %d commands changed the state (%s)", e.Commands, samples)
	default:
		return fmt.Sprintf("some of %d commands changed the state (%s; the sim has no snapshots to count them one by one)", e.Commands, samples)
	}
}

// Measure steps the commands a check with opts sends and counts those that changed the
// state (Effect): for a sim.Snapshotter, each command of a tick is left out once, from a
// snapshot of the tick before, and counts if the hash after the tick differs; for another
// sim, an instance stepped with every command is compared with one stepped with none. A
// failure (an error, a panic) ends the count and is returned with the counts so far.
func Measure(newSim sim.Factory, opts Options) (e Effect, err error) {
	o := opts.withDefaults()
	ticks, own := generate(o)
	for t := range ticks {
		e.Commands += len(ticks[t])
		for _, mine := range own[t] {
			if mine {
				e.Samples++
			}
		}
	}
	cfg := sim.Config{Seed: o.Seed, Players: o.Players, Params: o.Params}
	s, err := newSim(cfg)
	if err != nil {
		return e, err
	}
	defer sim.Close(s)
	probe, err := newSim(cfg)
	if err != nil {
		return e, err
	}
	defer sim.Close(probe)
	var tick uint64
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("at tick %d it panicked: %v", tick, r)
		}
	}()
	step := func(s sim.Sim, cmds []sim.Command) (uint64, error) {
		s.Step(tick, cmds)
		return sim.HashOf(s)
	}
	snap, exact := s.(sim.Snapshotter)
	if !exact {
		// Without snapshots: s gets the commands, probe none.
		for t, cmds := range ticks {
			tick = uint64(t)
			h, err := step(s, cmds)
			if err != nil {
				return e, err
			}
			hp, err := step(probe, nil)
			if err != nil {
				return e, err
			}
			if h != hp {
				e.Changed, e.SamplesChanged = e.Commands, e.Samples
				return e, nil
			}
		}
		return e, nil
	}
	e.Exact = true
	restore := probe.(sim.Snapshotter)
	var without []sim.Command
	for t, cmds := range ticks {
		tick = uint64(t)
		var before []byte
		if len(cmds) > 0 {
			before = snap.Snapshot()
		}
		h, err := step(s, cmds)
		if err != nil {
			return e, err
		}
		for i := range cmds {
			if err := restore.Restore(before); err != nil {
				return e, fmt.Errorf("at tick %d restoring its own snapshot: %w", tick, err)
			}
			without = append(append(without[:0], cmds[:i]...), cmds[i+1:]...)
			hp, err := step(probe, slices.Clip(without))
			if err != nil {
				return e, err
			}
			if hp != h {
				e.Changed++
				if own[t][i] {
					e.SamplesChanged++
				}
			}
		}
	}
	return e, nil
}
