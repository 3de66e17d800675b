package skirmish

import (
	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim/kit/rng"
)

// Bot is a scripted player. It reads the game's public state and draws from its own
// generator, never the game's, so a bot's payloads depend only on its seed, its player
// id and the state it is shown: two peers that run the same bots on the same states send
// the same commands.
//
// Every 2 to 7 ticks a bot takes one action: it spawns when it can afford the kind it
// drew (a soldier two times in three, else an archer); otherwise it sends its units that
// are not already attacking at the enemy nearest to one of them once its army is large
// enough (a threshold drawn at creation, lowered as the match goes on), calls idle
// units back towards its base, or stops a few units. About one action in 200 is a
// deliberately invalid payload (garbage bytes, an unknown kind, an enemy's unit or an
// attack on its own unit), to exercise the game's rejection paths.
type Bot struct {
	player   uint32
	r        rng.Rand
	next     uint64
	attackAt int
	mine     []Unit
	ids      []uint32
}

// NewBot returns a bot playing player, seeded from (seed, player).
func NewBot(player uint32, seed uint64) *Bot {
	b := &Bot{player: player, r: rng.NewStream(seed, 1<<32|uint64(player))}
	b.attackAt = 16 + int(b.r.Intn(6))
	return b
}

// Act appends the payloads the bot sends at tick, given the state of g, to out and returns
// it. It sends nothing once its player is out or the match is over.
func (b *Bot) Act(tick uint64, g *Game, out [][]byte) [][]byte {
	me, ok := g.Player(b.player)
	if over, _ := g.Outcome(); !ok || me.Out || over || tick < b.next {
		return out
	}
	b.next = tick + 2 + b.r.Uint64n(6)
	b.mine = b.mine[:0]
	for u := range g.Units() {
		if u.Owner == b.player {
			b.mine = append(b.mine, u)
		}
	}
	if b.r.Uint32n(200) == 0 {
		return append(out, b.invalid(g))
	}
	kind := Soldier
	if b.r.Uint32n(3) == 0 {
		kind = Archer
	}
	if st, _ := StatsOf(kind); me.Resource >= st.Cost {
		return append(out, AppendSpawn(nil, kind))
	}
	if len(b.mine) == 0 {
		return out
	}
	// The army goes on the offensive at attackAt units, one unit fewer every 1500 ticks.
	threshold := max(3, b.attackAt-int(tick/1500))
	roll := b.r.Uint32n(100)
	switch {
	case roll < 4:
		b.ids = b.ids[:0]
		for i := range b.mine {
			if b.r.Uint32n(4) == 0 {
				b.ids = append(b.ids, b.mine[i].ID)
			}
		}
		if len(b.ids) > 0 {
			return append(out, AppendStop(nil, b.ids))
		}
	case len(b.mine) >= threshold && roll < 70:
		lead := b.mine[b.r.Uint32n(uint32(len(b.mine)))]
		target, found := b.nearestEnemy(g, lead)
		if !found {
			return out
		}
		b.ids = b.ids[:0]
		for i := range b.mine {
			if b.mine[i].Order != AttackTarget {
				b.ids = append(b.ids, b.mine[i].ID)
			}
		}
		if len(b.ids) > 0 {
			return append(out, AppendAttack(nil, b.ids, target))
		}
	case roll < 20:
		// Regroup: idle units in the field walk back near the base.
		b.ids = b.ids[:0]
		for i := range b.mine {
			if b.mine[i].Order == Idle {
				b.ids = append(b.ids, b.mine[i].ID)
			}
		}
		if len(b.ids) > 0 {
			x := me.BaseX.Int() + b.r.Intn(9) - 4
			y := me.BaseY.Int() + b.r.Intn(9) - 4
			return append(out, AppendMove(nil, b.ids, int32(x), int32(y)))
		}
	}
	return out
}

// nearestEnemy returns the id of the enemy unit nearest to u at any distance, the lowest
// id on a tie.
func (b *Bot) nearestEnemy(g *Game, u Unit) (id uint32, found bool) {
	var best int64
	for v := range g.Units() {
		if v.Owner == b.player {
			continue
		}
		dx, dy := int64(v.X-u.X)>>8, int64(v.Y-u.Y)>>8 // 1/256 units: squares fit easily
		if d := dx*dx + dy*dy; !found || d < best {
			id, best, found = v.ID, d, true
		}
	}
	return id, found
}

// invalid returns a payload the game must reject and count.
func (b *Bot) invalid(g *Game) []byte {
	switch b.r.Uint32n(5) {
	case 0: // garbage
		p := make([]byte, 1+b.r.Uint32n(16))
		for i := range p {
			p[i] = byte(b.r.Uint32())
		}
		return p
	case 1: // an unknown kind
		return AppendSpawn(nil, skirmishv1.Kind(7))
	case 2: // someone else's unit
		for u := range g.Units() {
			if u.Owner != b.player {
				return AppendStop(nil, []uint32{u.ID})
			}
		}
	case 3: // an attack on its own unit
		if len(b.mine) > 0 {
			return AppendAttack(nil, []uint32{b.mine[0].ID}, b.mine[0].ID)
		}
	}
	return []byte{0x48, 0x01} // only an unknown field (9): sets no order
}
