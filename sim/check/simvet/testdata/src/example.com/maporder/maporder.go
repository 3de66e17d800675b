// Package maporder holds bad snippets that depend on a map's order.
package maporder

import (
	"maps"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

type Unit struct{ HP int }

type Game struct {
	units map[uint32]*Unit
	order []uint32
	h     uint64
	sum   float64
	last  uint32
	names string
}

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^maporder: `
	g.appendUnsorted()
	g.hashInOrder()
	_ = g.firstWeak()
	g.firstDead()
	g.floatSum()
	g.lastWins()
	g.concat()
	g.collect()
	g.rangeKeys()
	g.mixInOrder()
}

func (g *Game) Hash() uint64 { return g.h }

func (g *Game) appendUnsorted() {
	for id := range g.units {
		g.order = append(g.order, id) // want `^maporder: a map is visited in random order, and this loop's result depends on it: the slice gets the elements in the map's order and is not sorted`
	}
}

func (g *Game) hashInOrder() {
	d := new(sim.Digest)
	for id := range g.units {
		d.U64(uint64(id)) // want `^maporder: .*a call in the loop runs its effects in the map's order`
	}
}

func (g *Game) firstWeak() uint32 {
	for id, u := range g.units {
		if u.HP < 10 {
			return id // want `^maporder: .*it returns at whichever matching element comes first`
		}
	}
	return 0
}

func (g *Game) firstDead() {
	seen := 0
	for _, u := range g.units {
		seen++
		if u.HP <= 0 {
			break // want `^maporder: .*it leaves the loop early`
		}
	}
	g.last = uint32(seen)
}

func (g *Game) floatSum() {
	for _, u := range g.units {
		g.sum += float64(u.HP) // want `^maporder: .*a float accumulated in another order` `^float:`
	}
}

func (g *Game) lastWins() {
	for id := range g.units {
		g.last = id // want `^maporder: .*whichever comes last wins`
	}
}

func (g *Game) concat() {
	for id := range g.units {
		g.names += string(rune('a' + id)) // want `^maporder: .*its \+= gives a different result in another order`
	}
}

func (g *Game) collect() {
	g.order = slices.Collect(maps.Keys(g.units)) // want `^maporder: maps.Keys yields in a map's random order and the result is not sorted`
}

func (g *Game) rangeKeys() {
	for id := range maps.Keys(g.units) {
		g.order = append(g.order, id) // want `^maporder: .*not sorted after the loop`
	}
}

func (g *Game) mixInOrder() {
	for id := range g.units {
		g.h = g.h*31 + uint64(id) // want `^maporder: .*it combines each element with the result of those before it`
	}
}
