package skirmish

import (
	"math"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
)

// Step applies the commands of one tick in the order given, then advances the match by
// one tick: income, unit orders (movement, auto-engagement, strikes), removal of the
// dead, and the end check. The tick argument is not used: the game counts its own ticks.
// After the match is over, Step only counts the tick.
func (g *Game) Step(_ uint64, cmds []sim.Command) {
	g.tick++
	if g.over {
		return
	}
	for i := range cmds {
		g.apply(cmds[i].Player, cmds[i].Payload)
	}
	for i := range g.players {
		if p := &g.players[i]; !p.out {
			p.resource = p.resource.Add(g.income)
		}
	}
	g.advance()
	g.removeDead()
	g.checkEnd()
}

// apply validates and carries out one command. Anything invalid is counted and ignored.
func (g *Game) apply(id uint32, payload []byte) {
	if id < 1 || int(id) > len(g.players) || g.players[id-1].out {
		g.c.BadPlayer++
		return
	}
	o := &g.ord
	if !o.decode(payload) {
		g.c.Malformed++
		return
	}
	switch o.kind {
	case orderMove:
		x, y := g.clampCoord(o.x), g.clampCoord(o.y)
		for _, uid := range o.units {
			if u := g.own(id, uid); u != nil {
				u.Order, u.TX, u.TY, u.Target = MoveTo, x, y, 0
			}
		}
	case orderAttack:
		t := g.find(o.target)
		if t < 0 || g.units[t].Owner == id {
			g.c.BadTarget++
			return
		}
		for _, uid := range o.units {
			if u := g.own(id, uid); u != nil {
				u.Order, u.TX, u.TY, u.Target = AttackTarget, 0, 0, o.target
			}
		}
	case orderStop:
		for _, uid := range o.units {
			if u := g.own(id, uid); u != nil {
				u.Order, u.TX, u.TY, u.Target = Idle, 0, 0, 0
			}
		}
	case orderSpawn:
		st, _ := StatsOf(o.unit)
		p := &g.players[id-1]
		if p.resource < st.Cost || p.units >= MaxUnitsPerPlayer || g.nextID == math.MaxUint32 {
			g.c.Refused++
			return
		}
		p.resource -= st.Cost
		g.spawn(id, o.unit)
	}
	g.c.Applied++
}

// clampCoord turns a whole-unit coordinate into an F inside the map, counting clamps.
func (g *Game) clampCoord(v int32) fixed.F {
	if v < 0 || uint32(v) > g.p.mapSize {
		g.c.Clamped++
		return fixed.FromInt(int64(v)).Clamp(0, g.mapF)
	}
	return fixed.FromInt(int64(v))
}

// own returns the living unit uid if player id owns it; otherwise it counts NotOwned.
func (g *Game) own(id, uid uint32) *Unit {
	if i := g.find(uid); i >= 0 && g.units[i].Owner == id {
		return &g.units[i]
	}
	g.c.NotOwned++
	return nil
}

// advance runs every living unit's order once, in id order.
func (g *Game) advance() {
	for i := range g.units {
		u := &g.units[i]
		if u.HP <= 0 {
			continue // killed earlier this tick
		}
		if u.Cooldown > 0 {
			u.Cooldown--
		}
		st, _ := StatsOf(u.Kind)
		t := -1
		if u.Order == AttackTarget {
			if t = g.find(u.Target); t < 0 || g.units[t].HP <= 0 {
				u.Order, u.Target, t = Idle, 0, -1
			}
		}
		if u.Order == Idle {
			if t = g.nearestEnemy(i); t >= 0 {
				u.Order, u.Target = AttackTarget, g.units[t].ID
			}
		}
		switch u.Order {
		case MoveTo:
			if moveToward(u, u.TX, u.TY, st.Speed) {
				u.Order, u.TX, u.TY = Idle, 0, 0
			}
		case AttackTarget:
			v := &g.units[t]
			dx, dy := int64(v.X-u.X), int64(v.Y-u.Y)
			if r := int64(st.Range); dx*dx+dy*dy > r*r {
				moveToward(u, v.X, v.Y, st.Speed)
				break
			}
			if u.Cooldown == 0 {
				v.HP -= st.Damage + int32(g.rng.Uint32n(uint32(st.Roll)+1))
				u.Cooldown = st.Cooldown
				if v.HP <= 0 {
					g.c.Killed++
				}
			}
		}
	}
}

// nearestEnemy returns the index of the living enemy of unit i closest to it within
// Sight, the lowest id on a tie, or -1. Positions lie in a map of at most 4096 units, so
// squared raw distances (< 2^57) fit in int64.
func (g *Game) nearestEnemy(i int) int {
	u := &g.units[i]
	const sight = int64(Sight)
	best, bestD := -1, sight*sight+1
	for j := range g.units {
		v := &g.units[j]
		if v.Owner == u.Owner || v.HP <= 0 {
			continue
		}
		dx := int64(v.X - u.X)
		if dx > sight || dx < -sight {
			continue
		}
		dy := int64(v.Y - u.Y)
		if dy > sight || dy < -sight {
			continue
		}
		if d := dx*dx + dy*dy; d < bestD { // strict: the lowest id wins a tie
			best, bestD = j, d
		}
	}
	return best
}

// moveToward moves u by at most speed towards (x, y) and reports whether it arrived.
// The step is floored towards the target, so it never overshoots and stays in the map.
func moveToward(u *Unit, x, y, speed fixed.F) bool {
	dx, dy := x-u.X, y-u.Y
	d := fixed.Hypot(dx, dy)
	if d <= speed {
		u.X, u.Y = x, y
		return true
	}
	u.X += fixed.MulDiv(dx, speed, d)
	u.Y += fixed.MulDiv(dy, speed, d)
	return false
}

// removeDead drops killed units, keeping id order, and puts out players with no units.
func (g *Game) removeDead() {
	n := 0
	for i := range g.units {
		if g.units[i].HP > 0 {
			g.units[n] = g.units[i]
			n++
		} else {
			g.players[g.units[i].Owner-1].units--
		}
	}
	clear(g.units[n:])
	g.units = g.units[:n]
	for i := range g.players {
		if p := &g.players[i]; !p.out && p.units == 0 {
			p.out = true
		}
	}
}

// checkEnd ends the match when at most one player is left.
func (g *Game) checkEnd() {
	left, last := 0, uint32(0)
	for i := range g.players {
		if !g.players[i].out {
			left++
			last = uint32(i + 1)
		}
	}
	if left <= 1 {
		g.over = true
		if left == 1 {
			g.winner = last
		}
	}
}
