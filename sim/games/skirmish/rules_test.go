package skirmish

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
)

func cmd(player uint32, payload []byte) []sim.Command {
	return []sim.Command{{Player: player, Payload: payload}}
}

// duel returns a two-player game with one soldier each (ids 1 and 2), far apart.
func duel(t *testing.T, p *skirmishv1.Params) *Game {
	t.Helper()
	if p == nil {
		p = &skirmishv1.Params{}
	}
	p.StartUnits = 1
	return newGame(t, 2, p)
}

func unit(t *testing.T, g *Game, id uint32) Unit {
	t.Helper()
	u, ok := g.UnitByID(id)
	require.True(t, ok, "unit %d is alive", id)
	return u
}

func TestSpawnAndIncome(t *testing.T) {
	t.Run("income adds a tenth per tick by default", func(t *testing.T) {
		g := duel(t, nil)
		for range 10 {
			g.Step(g.Tick(), nil)
		}
		p, _ := g.Player(1)
		assert.Equal(t, 10*fixed.FromRatio(100, 1000), p.Resource)
	})
	t.Run("a spawn without enough resource is refused and counted", func(t *testing.T) {
		g := duel(t, nil)
		g.Step(0, cmd(1, AppendSpawn(nil, Soldier)))
		assert.Equal(t, 2, g.NumUnits())
		assert.Equal(t, uint64(1), g.Counters().Refused)
		assert.Zero(t, g.Counters().Applied)
	})
	t.Run("a soldier costs 50 and an archer 70", func(t *testing.T) {
		g := duel(t, &skirmishv1.Params{StartResource: 120})
		g.Step(0, []sim.Command{{Player: 1, Payload: AppendSpawn(nil, Soldier)}, {Player: 1, Payload: AppendSpawn(nil, Archer)}})
		p, _ := g.Player(1)
		assert.Equal(t, fixed.FromInt(0).Add(g.income), p.Resource)
		assert.Equal(t, uint32(3), p.Units)
		assert.Equal(t, uint32(3), p.Spawned)
		u := unit(t, g, 4)
		assert.Equal(t, Archer, u.Kind)
		assert.Equal(t, uint32(1), u.Owner)
		assert.Equal(t, int32(60), u.HP)
		assert.Equal(t, uint64(2), g.Counters().Applied)
	})
	t.Run("income pays for a soldier after 501 ticks", func(t *testing.T) {
		g := duel(t, nil)
		for g.Tick() < 500 {
			g.Step(g.Tick(), nil)
		}
		g.Step(g.Tick(), cmd(1, AppendSpawn(nil, Soldier)))
		assert.Equal(t, uint64(1), g.Counters().Refused, "0.1 per tick floors to slightly less")
		g.Step(g.Tick(), cmd(1, AppendSpawn(nil, Soldier)))
		assert.Equal(t, 3, g.NumUnits())
	})
	t.Run("spawns stop at the unit cap", func(t *testing.T) {
		g := newGame(t, 2, &skirmishv1.Params{StartUnits: MaxUnitsPerPlayer, StartResource: 1000})
		g.Step(0, cmd(1, AppendSpawn(nil, Soldier)))
		assert.Equal(t, uint64(1), g.Counters().Refused)
		assert.Equal(t, 2*MaxUnitsPerPlayer, g.NumUnits())
	})
	t.Run("unit ids only increase and are never reused", func(t *testing.T) {
		g := newGame(t, 3, &skirmishv1.Params{StartUnits: 1, StartResource: 1000})
		g.units[2].HP = 0
		g.Step(0, nil)
		_, alive := g.UnitByID(3)
		require.False(t, alive)
		g.Step(1, cmd(1, AppendSpawn(nil, Soldier)))
		_, alive = g.UnitByID(3)
		assert.False(t, alive, "id 3 is not reused")
		assert.Equal(t, uint32(1), unit(t, g, 4).Owner)
	})
}

func TestMove(t *testing.T) {
	t.Run("a moving unit reaches its target exactly and goes idle", func(t *testing.T) {
		g := duel(t, nil)
		start := unit(t, g, 1)
		g.Step(0, cmd(1, AppendMove(nil, []uint32{1}, 40, 35)))
		u := unit(t, g, 1)
		assert.Equal(t, MoveTo, u.Order)
		assert.InDelta(t, int64(fixed.Half), int64(fixed.Hypot(u.X-start.X, u.Y-start.Y)), 2, "moves its speed, 0.5 per tick")
		for range 100 {
			g.Step(g.Tick(), nil)
		}
		u = unit(t, g, 1)
		assert.Equal(t, Idle, u.Order)
		assert.Equal(t, fixed.FromInt(40), u.X)
		assert.Equal(t, fixed.FromInt(35), u.Y)
	})
	t.Run("coordinates outside the map are clamped and counted", func(t *testing.T) {
		g := duel(t, nil)
		g.Step(0, cmd(1, AppendMove(nil, []uint32{1}, -5, 1000)))
		u := unit(t, g, 1)
		assert.Equal(t, fixed.F(0), u.TX)
		assert.Equal(t, fixed.FromInt(256), u.TY)
		assert.Equal(t, uint64(2), g.Counters().Clamped)
		assert.Equal(t, uint64(1), g.Counters().Applied)
	})
	t.Run("stop makes a moving unit idle where it is", func(t *testing.T) {
		g := duel(t, nil)
		g.Step(0, cmd(1, AppendMove(nil, []uint32{1}, 100, 100)))
		g.Step(1, cmd(1, AppendStop(nil, []uint32{1})))
		u := unit(t, g, 1)
		assert.Equal(t, Idle, u.Order)
		g.Step(2, nil)
		assert.Equal(t, u.X, unit(t, g, 1).X)
	})
}

func TestCombat(t *testing.T) {
	t.Run("an attacker walks into range and kills its target", func(t *testing.T) {
		g := duel(t, nil)
		g.units[1].X, g.units[1].Y = g.units[0].X+fixed.FromInt(20), g.units[0].Y // outside sight
		g.units[1].HP = 10
		g.Step(0, cmd(1, AppendAttack(nil, []uint32{1}, 2)))
		assert.Equal(t, AttackTarget, unit(t, g, 1).Order)
		for g.NumUnits() == 2 && g.Tick() < 1000 {
			g.Step(g.Tick(), nil)
		}
		assert.Equal(t, uint64(1), g.Counters().Killed)
		_, alive := g.UnitByID(2)
		assert.False(t, alive, "the dead unit is removed")
	})
	t.Run("each strike deals base damage plus a roll", func(t *testing.T) {
		g := duel(t, nil)
		g.units[1].X, g.units[1].Y = g.units[0].X+fixed.One, g.units[0].Y
		g.Step(0, nil)
		hp := unit(t, g, 2).HP
		assert.GreaterOrEqual(t, hp, int32(100-12))
		assert.LessOrEqual(t, hp, int32(100-8))
		assert.Equal(t, uint32(10), unit(t, g, 1).Cooldown, "unit 1 struck first, unit 2 struck back")
	})
	t.Run("idle units engage the nearest enemy in sight", func(t *testing.T) {
		g := duel(t, nil)
		g.units[1].X, g.units[1].Y = g.units[0].X+fixed.FromInt(10), g.units[0].Y
		g.Step(0, nil)
		assert.Equal(t, uint32(2), unit(t, g, 1).Target)
		assert.Equal(t, uint32(1), unit(t, g, 2).Target)
	})
	t.Run("idle units ignore enemies beyond sight", func(t *testing.T) {
		g := duel(t, nil)
		g.units[1].X, g.units[1].Y = g.units[0].X+Sight+1, g.units[0].Y
		g.Step(0, nil)
		assert.Equal(t, Idle, unit(t, g, 1).Order)
	})
	t.Run("an attack on a missing or own unit is ignored and counted", func(t *testing.T) {
		g := duel(t, nil)
		g.Step(0, []sim.Command{{Player: 1, Payload: AppendAttack(nil, []uint32{1}, 1)}, {Player: 1, Payload: AppendAttack(nil, []uint32{1}, 77)}})
		assert.Equal(t, uint64(2), g.Counters().BadTarget)
		assert.Equal(t, Idle, unit(t, g, 1).Order)
	})
}

func TestOwnership(t *testing.T) {
	t.Run("orders for other players' units are ignored and counted", func(t *testing.T) {
		g := duel(t, nil)
		g.Step(0, cmd(1, AppendMove(nil, []uint32{2, 1, 99}, 50, 50)))
		assert.Equal(t, MoveTo, unit(t, g, 1).Order)
		assert.Equal(t, Idle, unit(t, g, 2).Order)
		assert.Equal(t, uint64(2), g.Counters().NotOwned)
		assert.Equal(t, uint64(1), g.Counters().Applied)
		g.Step(1, cmd(2, AppendStop(nil, []uint32{1})))
		assert.Equal(t, MoveTo, unit(t, g, 1).Order)
		assert.Equal(t, uint64(3), g.Counters().NotOwned)
	})
	t.Run("player ids outside the match are ignored and counted", func(t *testing.T) {
		g := duel(t, &skirmishv1.Params{StartResource: 1000})
		g.Step(0, []sim.Command{{Player: 0, Payload: AppendSpawn(nil, Soldier)}, {Player: 3, Payload: AppendSpawn(nil, Soldier)}, {Player: 1 << 31, Payload: nil}})
		assert.Equal(t, uint64(3), g.Counters().BadPlayer)
		assert.Equal(t, 2, g.NumUnits())
	})
}

func TestMalformedPayloads(t *testing.T) {
	valid := AppendStop(nil, []uint32{1})
	tooMany := make([]uint32, maxOrderUnits+1)
	tests := []struct {
		name    string
		payload []byte
	}{
		{"an empty payload sets no order", nil},
		{"garbage does not decode", []byte{0xff, 0xff, 0xff}},
		{"a truncated order does not decode", valid[:len(valid)-1]},
		{"only unknown fields set no order", []byte{0x48, 0x01}},
		{"two orders are one too many", append(AppendStop(nil, nil), AppendSpawn(nil, Soldier)...)},
		{"an order with a varint wire type is wrong", []byte{0x08, 0x01}},
		{"a spawn of an unspecified kind is unknown", AppendSpawn(nil, skirmishv1.Kind_KIND_UNSPECIFIED)},
		{"a spawn of kind 9 is unknown", AppendSpawn(nil, 9)},
		{"a negative kind is unknown", AppendSpawn(nil, -1)},
		{"a move coordinate with a bytes wire type is wrong", []byte{0x0a, 0x03, 0x12, 0x01, 0x00}},
		{"field number zero is invalid", []byte{0x1a, 0x02, 0x00, 0x00}},
		{"more than 1024 unit ids are too many", AppendStop(nil, tooMany)},
		{"a group start without an end does not decode", []byte{0x1a, 0x01, 0x0b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := duel(t, &skirmishv1.Params{StartResource: 1000})
			require.NotPanics(t, func() { g.Step(0, cmd(1, tt.payload)) })
			c := g.Counters()
			assert.Equal(t, uint64(1), c.Malformed)
			assert.Zero(t, c.Applied)
			assert.Equal(t, 2, g.NumUnits())
		})
	}
	t.Run("the malformed count is part of the hash", func(t *testing.T) {
		a, b := duel(t, nil), duel(t, nil)
		a.Step(0, cmd(1, []byte{0xff}))
		b.Step(0, nil)
		assert.NotEqual(t, a.Hash(), b.Hash())
	})
	t.Run("unknown fields inside an order are skipped", func(t *testing.T) {
		g := duel(t, nil)
		p := AppendStop(nil, []uint32{1})
		p[1] += 2
		p = append(p, 0x50, 0x07) // field 10, varint 7
		g.Step(0, cmd(1, p))
		assert.Equal(t, uint64(1), g.Counters().Applied)
	})
	t.Run("unpacked unit ids decode like packed ones", func(t *testing.T) {
		g := duel(t, nil)
		// Move{units: 1 (unpacked), x: 40, y: 35}
		g.Step(0, cmd(1, []byte{0x0a, 0x06, 0x08, 0x01, 0x10, 40, 0x18, 35}))
		assert.Equal(t, uint64(1), g.Counters().Applied)
		assert.Equal(t, fixed.FromInt(40), unit(t, g, 1).TX)
	})
}

func TestMatchEnd(t *testing.T) {
	g := duel(t, nil)
	g.units[1].X, g.units[1].Y = g.units[0].X+fixed.One, g.units[0].Y
	g.units[1].HP = 5
	g.Step(0, nil)
	t.Run("a player with no units left is out", func(t *testing.T) {
		p, _ := g.Player(2)
		assert.True(t, p.Out)
		assert.Zero(t, p.Units)
	})
	t.Run("the last player left wins", func(t *testing.T) {
		over, winner := g.Outcome()
		assert.True(t, over)
		assert.Equal(t, uint32(1), winner)
	})
	t.Run("steps after the end count the tick and change nothing else", func(t *testing.T) {
		before := *g
		units := append([]Unit(nil), g.units...)
		players := append([]player(nil), g.players...)
		g.Step(1, []sim.Command{{Player: 1, Payload: AppendMove(nil, []uint32{1}, 0, 0)}, {Player: 9, Payload: []byte{0xff}}})
		assert.Equal(t, uint64(2), g.Tick())
		assert.Equal(t, before.c, g.c)
		assert.Equal(t, before.rng, g.rng)
		assert.Equal(t, units, g.units)
		assert.Equal(t, players, g.players)
	})
	t.Run("players falling together end the match with no winner", func(t *testing.T) {
		g := duel(t, nil)
		g.units[1].X, g.units[1].Y = g.units[0].X+fixed.One, g.units[0].Y
		g.units[0].HP, g.units[1].HP = 1, 1
		g.Step(0, nil)
		// Unit 1 strikes first and kills unit 2, which then does not act: 1 wins.
		over, winner := g.Outcome()
		assert.True(t, over)
		assert.Equal(t, uint32(1), winner)
		g2 := duel(t, nil)
		g2.units[0].HP, g2.units[1].HP = 0, 0 // both dead at once
		g2.Step(0, nil)
		over, winner = g2.Outcome()
		assert.True(t, over)
		assert.Zero(t, winner)
	})
	t.Run("a command from a player who is out is ignored and counted", func(t *testing.T) {
		g := newGame(t, 3, &skirmishv1.Params{StartUnits: 1})
		g.units[2].HP = 0
		g.Step(0, nil)
		p, _ := g.Player(3)
		require.True(t, p.Out)
		g.Step(1, cmd(3, AppendSpawn(nil, Soldier)))
		assert.Equal(t, uint64(1), g.Counters().BadPlayer)
	})
}

func TestStepDoesNotAllocate(t *testing.T) {
	g := newGame(t, 4, &skirmishv1.Params{StartResource: 1000000})
	ids := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cmds := []sim.Command{
		{Player: 1, Payload: AppendMove(nil, ids, 100, 100)},
		{Player: 2, Payload: AppendAttack(nil, []uint32{11, 12, 13}, 1)},
		{Player: 3, Payload: AppendStop(nil, []uint32{21})},
		{Player: 4, Payload: []byte{0xff}},
		{Player: 4, Payload: AppendSpawn(nil, Archer)},
	}
	for range 200 { // grow the scratch and the unit slice
		g.Step(g.Tick(), cmds)
	}
	allocs := testing.AllocsPerRun(100, func() { g.Step(g.Tick(), cmds[:4]) })
	assert.Zero(t, allocs)
	assert.Zero(t, testing.AllocsPerRun(100, func() { g.Hash() }))
}
