// Package floats holds bad snippets of float arithmetic.
package floats

import (
	"math"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct {
	x, v, a float64
	n       int64
}

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^float: `
	g.move()
	g.fused()
	g.fusedAssign()
	g.trig()
	g.divide()
}

func (g *Game) move() {
	g.x = g.x + 1 // want `^float: float arithmetic in sim code`
}

func (g *Game) fused() {
	g.x = g.v*g.a + g.x // want `^fma: a\*b±c in floats may be fused into one FMA instruction`
}

func (g *Game) fusedAssign() {
	g.x += g.v * g.a // want `^fma: a\*b±c`
}

func (g *Game) trig() {
	g.n = int64(math.Sin(float64(g.n))) // want `^float: math.Sin is computed differently on some platforms`
}

func (g *Game) divide() {
	g.v /= 3 // want `^float: float arithmetic`
}

func (g *Game) Hash() uint64 { // want Hash:`^floathash: floats.\(\*Game\).Hash$`
	return math.Float64bits(g.x) ^ g.rest() // want `^floathash: a float reaches the hash`
}

func (g *Game) rest() uint64 {
	return uint64(g.a) // want `^floathash: a float reaches the hash.*\(call chain: floats.\(\*Game\).Hash → floats.\(\*Game\).rest\)$`
}

func (g *Game) SubHashes() []sim.NamedHash { // want SubHashes:`^floathash: `
	return []sim.NamedHash{{Name: "n", Hash: uint64(g.n)}, {Name: "x", Hash: uint64(g.x)}} // want `^floathash: a float reaches the hash`
}
