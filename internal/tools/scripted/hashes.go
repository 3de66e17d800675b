package scripted

import (
	"bufio"
	"fmt"
	"io"

	"github.com/tickrelay/tickrelay/sim"
)

// WriteHashes plays ticks ticks of a scripted match and writes its hash stream to w:
// "<tick> <16-hex hash>" after every `every` ticks, "over <tick> winner <player>" once
// when the game ends, and "final <tick> <hash>" last. The text is identical on every
// platform; the cross-architecture test and the golden files compare it byte for byte.
func WriteHashes(w io.Writer, opts Options, ticks, every uint64) error {
	return WriteHashesChecked(w, opts, ticks, every, nil)
}

// WriteHashesChecked is WriteHashes that also calls check, if not nil, after every tick
// (before its line is written), and stops at its first error: a test compares a sim
// with the native game at every tick and prints its stream in one run.
func WriteHashesChecked(w io.Writer, opts Options, ticks, every uint64, check func(m *Match, tick uint64) error) error {
	if ticks == 0 {
		return fmt.Errorf("scripted: ticks must be at least 1")
	}
	if every == 0 {
		return fmt.Errorf("scripted: every must be at least 1")
	}
	m, err := New(opts)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	var hash uint64
	ended := false
	for t := uint64(0); t < ticks; t++ {
		if _, err := m.Next(); err != nil {
			return err
		}
		hash = m.Sim().Hash()
		if check != nil {
			if err := check(m, t); err != nil {
				return err
			}
		}
		if (t+1)%every == 0 {
			fmt.Fprintf(bw, "%d %016x\n", t, hash)
		}
		if over, winner := outcome(m); over && !ended {
			ended = true
			fmt.Fprintf(bw, "over %d winner %d\n", t, winner)
		}
	}
	fmt.Fprintf(bw, "final %d %016x\n", ticks-1, hash)
	return bw.Flush()
}

// outcome is the hashed sim's outcome where it knows one, else the game's.
func outcome(m *Match) (bool, uint32) {
	if e, ok := m.Sim().(sim.Ender); ok {
		return e.Outcome()
	}
	if m.game == nil {
		return false, 0 // a sim that does not know when it is over
	}
	return m.game.Outcome()
}
