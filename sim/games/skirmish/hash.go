package skirmish

import "github.com/tickrelay/tickrelay/sim"

// Hash returns the FNV-1a 64 digest of the whole state: the match section (tick, end,
// next id, params), then players, units, the PRNG and the counters, in that order. It
// does not allocate.
func (g *Game) Hash() uint64 {
	d := sim.NewDigest()
	g.hashMatch(&d)
	g.hashPlayers(&d)
	g.hashUnits(&d)
	g.rng.Hash(&d)
	g.hashCounters(&d)
	return d.Sum()
}

// SubHashes returns the digests of the parts Hash covers, named "match", "players",
// "units", "rng" and "counters", in that order.
func (g *Game) SubHashes() []sim.NamedHash {
	parts := [...]struct {
		name string
		fn   func(*sim.Digest)
	}{
		{"match", g.hashMatch},
		{"players", g.hashPlayers},
		{"units", g.hashUnits},
		{"rng", g.rng.Hash},
		{"counters", g.hashCounters},
	}
	out := make([]sim.NamedHash, len(parts))
	for i, p := range parts {
		d := sim.NewDigest()
		p.fn(&d)
		out[i] = sim.NamedHash{Name: p.name, Hash: d.Sum()}
	}
	return out
}

func (g *Game) hashMatch(d *sim.Digest) {
	d.U64(g.tick)
	d.Bool(g.over)
	d.U32(g.winner)
	d.U32(g.nextID)
	d.U32(g.p.mapSize)
	d.U32(g.p.startUnits)
	d.U32(g.p.startResource)
	d.U32(g.p.incomeMilli)
}

func (g *Game) hashPlayers(d *sim.Digest) {
	d.U32(uint32(len(g.players)))
	for i := range g.players {
		p := &g.players[i]
		d.I64(int64(p.resource))
		d.Bool(p.out)
		d.U32(p.spawned)
	}
}

func (g *Game) hashUnits(d *sim.Digest) {
	h := *d // a local copy the compiler can keep in a register
	h.U32(uint32(len(g.units)))
	for i := range g.units {
		u := &g.units[i]
		h.U32(u.ID)
		// Owner (1..8), kind (1..2) and order (0..2) share one word. Positions lie in
		// [0, 4096] map units, below 2^28 raw, so 32 bits hold them exactly.
		h.U32(u.Owner | uint32(u.Kind)<<8 | uint32(u.Order)<<16)
		h.U32(uint32(u.X))
		h.U32(uint32(u.Y))
		h.U32(uint32(u.HP))
		h.U32(uint32(u.TX))
		h.U32(uint32(u.TY))
		h.U32(u.Target)
		h.U32(u.Cooldown)
	}
	*d = h
}

func (g *Game) hashCounters(d *sim.Digest) {
	c := &g.c
	for _, v := range [...]uint64{c.Applied, c.Malformed, c.BadPlayer, c.NotOwned, c.BadTarget, c.Refused, c.Clamped, c.Spawned, c.Killed} {
		d.U64(v)
	}
}
