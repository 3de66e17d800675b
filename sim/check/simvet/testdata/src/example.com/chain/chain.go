// Package chain holds bad snippets whose nondeterminism is a few calls away.
package chain

import (
	"math/rand"

	"example.com/helper"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct{ x int64 }

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^time: chain.\(\*Game\).Step → helper.Jitter → helper.wobble$`
	g.x = helper.Jitter(g.x) // want `^time: time.Now reads the wall clock.*\(call chain: chain.\(\*Game\).Step → helper.Jitter → helper.wobble\)$`
	g.x = helper.Clamp(g.x, 0, 100)
	g.x += helper.Stamp()
	g.advance()
}

func (g *Game) advance() { g.x += roll() }

func roll() int64 {
	return rand.Int63n(6) // want `^rand: rand.Int63n .*\(call chain: chain.\(\*Game\).Step → chain.\(\*Game\).advance → chain.roll\)$`
}

func (g *Game) Hash() uint64 { return uint64(g.x) }
