package skirmish

import (
	"encoding/binary"
	"fmt"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
)

// snapshotMagic starts every snapshot; its last byte is the format version.
const snapshotMagic = "SKRM\x01"

// Snapshot returns the whole state in a compact binary form: the magic "SKRM" and format
// version 1, then params, match fields, PRNG state, counters, players and units as
// varints (signed values zig-zag). Restore reads it back.
func (g *Game) Snapshot() []byte {
	b := make([]byte, 0, 64+16*len(g.players)+24*len(g.units))
	b = append(b, snapshotMagic...)
	u := binary.AppendUvarint
	s := binary.AppendVarint
	b = u(b, uint64(g.p.mapSize))
	b = u(b, uint64(g.p.startUnits))
	b = u(b, uint64(g.p.startResource))
	b = u(b, uint64(g.p.incomeMilli))
	b = u(b, g.tick)
	b = u(b, uint64(g.winner))
	b = append(b, boolByte(g.over))
	b = u(b, uint64(g.nextID))
	st, inc := g.rng.State()
	b = binary.LittleEndian.AppendUint64(b, st)
	b = binary.LittleEndian.AppendUint64(b, inc)
	c := &g.c
	for _, v := range [...]uint64{c.Applied, c.Malformed, c.BadPlayer, c.NotOwned, c.BadTarget, c.Refused, c.Clamped, c.Spawned, c.Killed} {
		b = u(b, v)
	}
	b = u(b, uint64(len(g.players)))
	for i := range g.players {
		p := &g.players[i]
		b = s(b, int64(p.resource))
		b = append(b, boolByte(p.out))
		b = u(b, uint64(p.spawned))
	}
	b = u(b, uint64(len(g.units)))
	for i := range g.units {
		v := &g.units[i]
		b = u(b, uint64(v.ID))
		b = u(b, uint64(v.Owner))
		b = u(b, uint64(v.Kind))
		b = s(b, int64(v.X))
		b = s(b, int64(v.Y))
		b = s(b, int64(v.HP))
		b = append(b, byte(v.Order))
		b = s(b, int64(v.TX))
		b = s(b, int64(v.TY))
		b = u(b, uint64(v.Target))
		b = u(b, uint64(v.Cooldown))
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// reader reads a snapshot, remembering the first problem.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, args...)...)
	}
}

func (r *reader) uvarint(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s is cut or overlong", what)
		return 0
	}
	r.b = r.b[n:]
	if v > max {
		r.fail("%s %d is above %d", what, v, max)
		return 0
	}
	return v
}

func (r *reader) varint(what string, lo, hi int64) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("%s is cut or overlong", what)
		return 0
	}
	r.b = r.b[n:]
	if v < lo || v > hi {
		r.fail("%s %d is outside %d..%d", what, v, lo, hi)
		return 0
	}
	return v
}

func (r *reader) byte(what string, max byte) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("%s is cut", what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	if v > max {
		r.fail("%s %d is above %d", what, v, max)
		return 0
	}
	return v
}

func (r *reader) u64(what string) uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail("%s is cut", what)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// Restore replaces the whole state with a snapshot from Snapshot, params and player count
// included. It checks every field and returns an error wrapping ErrBadSnapshot, leaving
// the game unchanged, for bytes that are not a consistent snapshot. It never panics.
func (g *Game) Restore(snapshot []byte) error {
	if len(snapshot) < len(snapshotMagic) || string(snapshot[:len(snapshotMagic)-1]) != snapshotMagic[:len(snapshotMagic)-1] {
		return fmt.Errorf("%w: no skirmish snapshot magic", ErrBadSnapshot)
	}
	if v := snapshot[len(snapshotMagic)-1]; v != snapshotMagic[len(snapshotMagic)-1] {
		return fmt.Errorf("%w: format version %d, this build reads version %d", ErrBadSnapshot, v, snapshotMagic[len(snapshotMagic)-1])
	}
	r := &reader{b: snapshot[len(snapshotMagic):]}
	var n Game
	if err := n.readHeader(r); err != nil {
		return err
	}
	for i := range n.players {
		q := &n.players[i]
		q.resource = fixed.F(r.varint("resource", 0, int64(fixed.Max)))
		q.out = r.byte("out flag", 1) == 1
		q.spawned = uint32(r.uvarint("spawned", 1<<32-1))
	}
	if err := n.readUnits(r); err != nil {
		return err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the last unit", ErrBadSnapshot, len(r.b))
	}
	if err := n.checkOutcome(); err != nil {
		return err
	}
	n.ord = g.ord // keep the scratch capacity
	*g = n
	return nil
}

// readHeader reads a snapshot's params, match fields, PRNG, counters and player count
// into n (its players made, not yet read), checking each against the others.
func (n *Game) readHeader(r *reader) error {
	var p params
	p.mapSize = uint32(r.uvarint("map_size", MaxMapSize))
	p.startUnits = uint32(r.uvarint("start_units", MaxUnitsPerPlayer))
	p.startResource = uint32(r.uvarint("start_resource", MaxStartResource))
	p.incomeMilli = uint32(r.uvarint("income_milli", MaxIncomeMilli))
	if r.err != nil {
		return r.err
	}
	if err := p.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	n.tick = r.uvarint("tick", 1<<63)
	n.winner = uint32(r.uvarint("winner", MaxPlayers))
	n.over = r.byte("over flag", 1) == 1
	n.nextID = uint32(r.uvarint("next id", 1<<32-1))
	if err := n.rng.SetState(r.u64("rng state"), r.u64("rng increment")); err != nil && r.err == nil {
		r.fail("%v", err)
	}
	c := &n.c
	for _, v := range [...]*uint64{&c.Applied, &c.Malformed, &c.BadPlayer, &c.NotOwned, &c.BadTarget, &c.Refused, &c.Clamped, &c.Spawned, &c.Killed} {
		*v = r.uvarint("counter", 1<<64-1)
	}
	players := int(r.uvarint("players", MaxPlayers))
	if r.err != nil {
		return r.err
	}
	if players < MinPlayers {
		return fmt.Errorf("%w: %d players, need %d to %d", ErrBadSnapshot, players, MinPlayers, MaxPlayers)
	}
	if n.winner != 0 && !n.over {
		return fmt.Errorf("%w: winner %d of a match that is not over", ErrBadSnapshot, n.winner)
	}
	if n.winner > uint32(players) {
		return fmt.Errorf("%w: winner %d of %d players", ErrBadSnapshot, n.winner, players)
	}
	n.setParams(p, players)
	return nil
}

// readUnits reads the snapshot's units into n, each checked: a known kind, ids ascending
// below the next id, an owner still in the match and under the unit cap, order fields
// that fit the order.
func (n *Game) readUnits(r *reader) error {
	players := len(n.players)
	// A unit takes at least 11 bytes; refuse counts the rest of the bytes cannot hold
	// before allocating.
	count := r.uvarint("unit count", uint64(MaxUnitsPerPlayer*players))
	if r.err == nil && count > uint64(len(r.b)/11) {
		r.fail("unit count %d does not fit in %d bytes", count, len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	n.units = make([]Unit, 0, count)
	mapRaw := int64(n.mapF)
	for k := uint64(0); k < count && r.err == nil; k++ {
		var u Unit
		u.ID = uint32(r.uvarint("unit id", 1<<32-1))
		u.Owner = uint32(r.uvarint("unit owner", uint64(players)))
		u.Kind = skirmishv1.Kind(r.uvarint("unit kind", uint64(Archer)))
		u.X = fixed.F(r.varint("unit x", 0, mapRaw))
		u.Y = fixed.F(r.varint("unit y", 0, mapRaw))
		st, ok := StatsOf(u.Kind)
		u.HP = int32(r.varint("unit hp", 1, int64(st.HP)))
		u.Order = Order(r.byte("unit order", byte(numOrders-1)))
		u.TX = fixed.F(r.varint("unit move x", 0, mapRaw))
		u.TY = fixed.F(r.varint("unit move y", 0, mapRaw))
		u.Target = uint32(r.uvarint("unit target", 1<<32-1))
		u.Cooldown = uint32(r.uvarint("unit cooldown", uint64(st.Cooldown)))
		switch {
		case r.err != nil:
		case !ok:
			r.fail("unit %d has unknown kind %d", u.ID, u.Kind)
		case u.ID == 0 || u.ID >= n.nextID || (len(n.units) > 0 && u.ID <= n.units[len(n.units)-1].ID):
			r.fail("unit id %d is out of order or not below next id %d", u.ID, n.nextID)
		case u.Owner == 0 || n.players[u.Owner-1].out:
			r.fail("unit %d has owner %d, who is not in the match", u.ID, u.Owner)
		case n.players[u.Owner-1].units >= MaxUnitsPerPlayer:
			r.fail("player %d has more than %d units", u.Owner, MaxUnitsPerPlayer)
		case (u.Order == AttackTarget) != (u.Target != 0), u.Order != MoveTo && (u.TX != 0 || u.TY != 0):
			r.fail("unit %d has order fields that do not match order %v", u.ID, u.Order)
		}
		if r.err == nil {
			n.players[u.Owner-1].units++
			n.units = append(n.units, u)
		}
	}
	return r.err
}

// checkOutcome holds the end flag and winner to the players left: every player still in has
// units, and the match is over exactly when at most one is left, won by that one.
func (n *Game) checkOutcome() error {
	left, last := 0, uint32(0)
	for i := range n.players {
		if q := &n.players[i]; !q.out {
			if q.units == 0 {
				return fmt.Errorf("%w: player %d has no units but is not out", ErrBadSnapshot, i+1)
			}
			left, last = left+1, uint32(i+1)
		}
	}
	if over := left <= 1; over != n.over || (over && left == 1 && n.winner != last) || (left == 0 && n.winner != 0) {
		return fmt.Errorf("%w: the end flag and winner do not match the %d players left", ErrBadSnapshot, left)
	}
	return nil
}
