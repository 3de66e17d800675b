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
	m := &measure{}
	m.ticks, m.own = generate(o)
	for t := range m.ticks {
		m.e.Commands += len(m.ticks[t])
		for _, mine := range m.own[t] {
			if mine {
				m.e.Samples++
			}
		}
	}
	cfg := sim.Config{Seed: o.Seed, Players: o.Players, Params: o.Params}
	s, err := newSim(cfg)
	if err != nil {
		return m.e, err
	}
	defer sim.Close(s)
	probe, err := newSim(cfg)
	if err != nil {
		return m.e, err
	}
	defer sim.Close(probe)
	defer func() {
		if r := recover(); r != nil {
			e, err = m.e, fmt.Errorf("at tick %d it panicked: %v", m.tick, r)
		}
	}()
	if snap, exact := s.(sim.Snapshotter); exact {
		m.e.Exact = true
		err = m.eachCommand(s, snap, probe)
	} else {
		err = m.allCommands(s, probe)
	}
	return m.e, err
}

// measure is one count of the commands that change a sim's state: the commands of each
// tick, which of them are the sim's own samples, the tick being stepped, the counts.
type measure struct {
	ticks [][]sim.Command
	own   [][]bool
	tick  uint64
	e     Effect
}

func (m *measure) step(s sim.Sim, cmds []sim.Command) (uint64, error) {
	s.Step(m.tick, cmds)
	return sim.HashOf(s)
}

// allCommands counts for a sim without snapshots: s gets the commands, probe none, and
// every command counts as changing the state once their hashes differ.
func (m *measure) allCommands(s, probe sim.Sim) error {
	for t, cmds := range m.ticks {
		m.tick = uint64(t)
		h, err := m.step(s, cmds)
		if err != nil {
			return err
		}
		hp, err := m.step(probe, nil)
		if err != nil {
			return err
		}
		if h != hp {
			m.e.Changed, m.e.SamplesChanged = m.e.Commands, m.e.Samples
			return nil
		}
	}
	return nil
}

// eachCommand counts for a sim with snapshots: each command of a tick is left out once,
// from a snapshot of the tick before, and counts if the hash after the tick differs.
func (m *measure) eachCommand(s sim.Sim, snap sim.Snapshotter, probe sim.Sim) error {
	restore := probe.(sim.Snapshotter) // the same factory's: a panic if not, which Measure reports
	var without []sim.Command
	for t, cmds := range m.ticks {
		m.tick = uint64(t)
		var before []byte
		if len(cmds) > 0 {
			before = snap.Snapshot()
		}
		h, err := m.step(s, cmds)
		if err != nil {
			return err
		}
		for i := range cmds {
			if err := restore.Restore(before); err != nil {
				return fmt.Errorf("at tick %d restoring its own snapshot: %w", m.tick, err)
			}
			without = append(append(without[:0], cmds[:i]...), cmds[i+1:]...)
			hp, err := m.step(probe, slices.Clip(without))
			if err != nil {
				return err
			}
			if hp != h {
				m.e.Changed++
				if m.own[t][i] {
					m.e.SamplesChanged++
				}
			}
		}
	}
	return nil
}
