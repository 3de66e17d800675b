// Package snap holds a sim whose snapshot forgets a field Step writes.
package snap

import (
	"encoding/binary"
	"errors"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct {
	tick    uint64
	score   int64
	streak  int64
	hashOK  int64
	scratch []byte //tickrelay:deterministic rebuilt from nothing by every Step before it is read
}

func (g *Game) Step(tick uint64, cmds []sim.Command) {
	g.tick = tick
	g.scratch = g.scratch[:0]
	g.hashOK++
	for _, c := range cmds {
		g.score += int64(c.Player)
		g.bump()
	}
}

func (g *Game) bump() {
	g.streak++ // want `^snapshot: Step writes Game.streak, but neither Snapshot nor Hash reads it.*\(call chain: snap.\(\*Game\).Step → snap.\(\*Game\).bump\)$`
}

func (g *Game) Hash() uint64 { return g.tick ^ uint64(g.score) ^ uint64(g.hashOK) }

func (g *Game) Snapshot() []byte {
	b := binary.LittleEndian.AppendUint64(nil, g.tick)
	return binary.LittleEndian.AppendUint64(b, uint64(g.score))
}

func (g *Game) Restore(b []byte) error {
	if len(b) != 16 {
		return errors.New("snap: a snapshot is 16 bytes")
	}
	g.tick, g.score = binary.LittleEndian.Uint64(b), int64(binary.LittleEndian.Uint64(b[8:]))
	return nil
}
