// Package globals holds bad snippets that write package-level variables.
package globals

import (
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/kit/rng"
)

var (
	spawned int
	seen    = map[uint32]bool{}
	shared  rng.Rand
	last    struct{ tick uint64 }
)

type Game struct{ n uint64 }

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^global: `
	spawned++                   // want `^global: writes the package-level variable globals.spawned`
	seen[cmds[0].Player] = true // want `^global: writes the package-level variable globals.seen`
	g.n = shared.Uint64()       // want `^global: writes the package-level variable globals.shared`
	last.tick = tick            // want `^global: writes the package-level variable globals.last`
	delete(seen, 0)             // want `^global: writes the package-level variable globals.seen`
}

func (g *Game) Hash() uint64 { return g.n }
