package skirmish

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

// match is a game driven by scripted bots with no input delay: the commands the bots send
// looking at the state after tick t-1 are applied at tick t.
type match struct {
	g    *Game
	bots []*Bot
	cmds []sim.Command
	out  [][]byte
}

func newMatch(tb testing.TB, seed uint64, players int, params []byte) *match {
	tb.Helper()
	g, err := New(sim.Config{Seed: seed, Players: players, Params: params})
	require.NoError(tb, err)
	m := &match{g: g}
	for p := 1; p <= players; p++ {
		m.bots = append(m.bots, NewBot(uint32(p), seed))
	}
	return m
}

// step lets every bot act, then steps the game once.
func (m *match) step() {
	tick := m.g.Tick()
	m.cmds = m.cmds[:0]
	for i, b := range m.bots {
		m.out = b.Act(tick, m.g, m.out[:0])
		for k, p := range m.out {
			m.cmds = append(m.cmds, sim.Command{Player: uint32(i + 1), Seq: uint32(k), Payload: p})
		}
	}
	m.g.Step(tick, m.cmds)
}

// run steps until the match is over or max ticks passed, and returns the end tick (0 if
// it did not end).
func (m *match) run(max uint64) uint64 {
	for m.g.Tick() < max {
		m.step()
		if over, _ := m.g.Outcome(); over {
			return m.g.Tick()
		}
	}
	return 0
}
