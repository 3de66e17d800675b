package skirmish

import (
	"fmt"
	"iter"

	"google.golang.org/protobuf/proto"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
	"github.com/tickrelay/tickrelay/sim/kit/rng"
)

// Name and Version identify the game in the sim registry.
const (
	Name    = "skirmish"
	Version = 1
)

func init() {
	sim.Register(Name, Version, func(cfg sim.Config) (sim.Sim, error) {
		g, err := New(cfg)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return g, nil
	})
}

// Limits and defaults of a match, documented where they are defined.
const (
	// MinPlayers and MaxPlayers bound Config.Players.
	MinPlayers = 2
	MaxPlayers = 8
	// DefaultMapSize is the side of the square map in whole units when Params.map_size
	// is 0; a set map_size must be in [MinMapSize, MaxMapSize].
	DefaultMapSize = 256
	MinMapSize     = 32
	MaxMapSize     = 4096
	// DefaultStartUnits is the number of soldiers each player starts with when
	// Params.start_units is 0; a set value must be at most MaxUnitsPerPlayer.
	DefaultStartUnits = 10
	// DefaultStartResource is each player's starting resource in whole units (0); a set
	// value must be at most MaxStartResource.
	DefaultStartResource = 0
	MaxStartResource     = 1_000_000
	// DefaultIncomeMilli is the resource each player gains per tick, in 1/1000 units,
	// when Params.income_milli is 0 (100, i.e. 0.1 per tick); at most MaxIncomeMilli.
	DefaultIncomeMilli = 100
	MaxIncomeMilli     = 1_000_000
	// MaxUnitsPerPlayer caps a player's living units; a spawn beyond it is refused.
	MaxUnitsPerPlayer = 200
	// maxOrderUnits caps the unit ids one order may list; more makes it malformed.
	maxOrderUnits = 1024
)

// Sight is how far an idle unit looks for an enemy to engage: 12 map units.
const Sight = 12 * fixed.One

// Unit kinds, the payload's enum.
const (
	Soldier = skirmishv1.Kind_KIND_SOLDIER
	Archer  = skirmishv1.Kind_KIND_ARCHER
)

// Stats are the fixed properties of a unit kind.
type Stats struct {
	// HP is the hit points a new unit has.
	HP int32
	// Range is the attack reach in map units.
	Range fixed.F
	// Speed is the distance covered per tick in map units.
	Speed fixed.F
	// Damage is the base damage of one strike; each strike adds a roll in [0, Roll].
	Damage, Roll int32
	// Cooldown is the ticks between two strikes.
	Cooldown uint32
	// Cost is the resource a spawn takes.
	Cost fixed.F
}

// StatsOf returns the stats of kind k; ok is false for any other kind.
func StatsOf(k skirmishv1.Kind) (s Stats, ok bool) {
	switch k {
	case Soldier:
		return Stats{HP: 100, Range: fixed.One + fixed.Half, Speed: fixed.Half, Damage: 8, Roll: 4, Cooldown: 10, Cost: 50 * fixed.One}, true
	case Archer:
		return Stats{HP: 60, Range: 6 * fixed.One, Speed: 2 * fixed.One / 5, Damage: 6, Roll: 3, Cooldown: 15, Cost: 70 * fixed.One}, true
	}
	return Stats{}, false
}

// Order is what a unit is doing.
type Order uint8

// Orders.
const (
	// Idle units stand still and engage the nearest enemy within Sight.
	Idle Order = iota
	// MoveTo units walk to (TX, TY), then go idle.
	MoveTo
	// AttackTarget units walk towards Target until in range, then strike it.
	AttackTarget
	numOrders
)

func (o Order) String() string {
	switch o {
	case Idle:
		return "idle"
	case MoveTo:
		return "move"
	case AttackTarget:
		return "attack"
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

// Unit is one living unit. Values returned by Game are copies: changing them changes
// nothing in the game.
type Unit struct {
	ID       uint32
	Owner    uint32
	Kind     skirmishv1.Kind
	X, Y     fixed.F
	HP       int32
	Order    Order
	TX, TY   fixed.F // destination of a MoveTo order, else 0
	Target   uint32  // target of an AttackTarget order, else 0
	Cooldown uint32  // ticks until the unit can strike again
}

// Player is a copy of one player's state.
type Player struct {
	ID           uint32
	Resource     fixed.F
	Out          bool
	BaseX, BaseY fixed.F
	// Units is the number of living units; Spawned counts every unit the player ever had.
	Units, Spawned uint32
}

// Counters count what happened to commands and units; they are part of the hash.
type Counters struct {
	// Applied counts commands that were decoded and accepted (an accepted order may
	// still skip some of its unit ids, counted in NotOwned).
	Applied uint64
	// Malformed counts payloads that do not decode, set no order or more than one, name
	// an unknown kind or list more than 1024 units.
	Malformed uint64
	// BadPlayer counts commands from a player id outside 1..players or a player who is out.
	BadPlayer uint64
	// NotOwned counts unit ids in orders that are not the sender's living units.
	NotOwned uint64
	// BadTarget counts attacks on a unit that does not exist or is the sender's own.
	BadTarget uint64
	// Refused counts spawns the player could not afford or that hit MaxUnitsPerPlayer.
	Refused uint64
	// Clamped counts move coordinates outside the map, clamped to its edge.
	Clamped uint64
	// Spawned and Killed count units created (start units included) and killed.
	Spawned, Killed uint64
}

// params are the decoded, validated match parameters.
type params struct {
	mapSize, startUnits, startResource, incomeMilli uint32
}

// player is one player's state. Base and unit count are derived, not hashed.
type player struct {
	resource     fixed.F
	out          bool
	spawned      uint32
	units        uint32
	baseX, baseY fixed.F
}

// Game is a skirmish match. It implements sim.Sim, sim.Snapshotter, sim.Dumper,
// sim.SubHasher and sim.Ender. It is not safe for concurrent use.
type Game struct {
	p       params
	mapF    fixed.F // p.mapSize as F
	income  fixed.F
	players []player // index = player id - 1
	units   []Unit   // living units (and, during a tick, the just killed), sorted by ID
	nextID  uint32
	tick    uint64
	rng     rng.Rand
	c       Counters
	over    bool
	winner  uint32

	ord order //tickrelay:deterministic decode scratch, not state: apply decodes every command into it before reading it
}

var (
	_ sim.Sim         = (*Game)(nil)
	_ sim.Snapshotter = (*Game)(nil)
	_ sim.Dumper      = (*Game)(nil)
	_ sim.SubHasher   = (*Game)(nil)
	_ sim.Ender       = (*Game)(nil)
)

// New builds a match for cfg.Players players (2..8) from cfg.Params, an encoded
// skirmishv1.Params (nil or empty for the defaults). It returns an error wrapping
// sim.ErrBadConfig for a player count or parameters it cannot use.
func New(cfg sim.Config) (*Game, error) {
	if cfg.Players < MinPlayers || cfg.Players > MaxPlayers {
		return nil, fmt.Errorf("%w: skirmish needs %d to %d players, got %d", sim.ErrBadConfig, MinPlayers, MaxPlayers, cfg.Players)
	}
	var pp skirmishv1.Params
	if err := proto.Unmarshal(cfg.Params, &pp); err != nil {
		return nil, fmt.Errorf("%w: skirmish params do not decode as skirmish.v1.Params: %v", sim.ErrBadConfig, err)
	}
	p := params{mapSize: pp.GetMapSize(), startUnits: pp.GetStartUnits(), startResource: pp.GetStartResource(), incomeMilli: pp.GetIncomeMilli()}
	if p.mapSize == 0 {
		p.mapSize = DefaultMapSize
	}
	if p.startUnits == 0 {
		p.startUnits = DefaultStartUnits
	}
	if p.incomeMilli == 0 {
		p.incomeMilli = DefaultIncomeMilli
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	g := &Game{rng: rng.New(cfg.Seed), nextID: 1}
	g.setParams(p, cfg.Players)
	for i := range g.players {
		g.players[i].resource = fixed.FromInt(int64(p.startResource))
	}
	for i := range g.players {
		for k := uint32(0); k < p.startUnits; k++ {
			g.spawn(uint32(i+1), Soldier)
		}
	}
	return g, nil
}

func (p params) validate() error {
	switch {
	case p.mapSize < MinMapSize || p.mapSize > MaxMapSize:
		return fmt.Errorf("%w: skirmish map_size %d is outside %d..%d", sim.ErrBadConfig, p.mapSize, MinMapSize, MaxMapSize)
	case p.startUnits < 1 || p.startUnits > MaxUnitsPerPlayer:
		return fmt.Errorf("%w: skirmish start_units %d is outside 1..%d", sim.ErrBadConfig, p.startUnits, MaxUnitsPerPlayer)
	case p.startResource > MaxStartResource:
		return fmt.Errorf("%w: skirmish start_resource %d is above %d", sim.ErrBadConfig, p.startResource, MaxStartResource)
	case p.incomeMilli < 1 || p.incomeMilli > MaxIncomeMilli:
		return fmt.Errorf("%w: skirmish income_milli %d is outside 1..%d", sim.ErrBadConfig, p.incomeMilli, MaxIncomeMilli)
	}
	return nil
}

// setParams installs validated params and n players with their bases and no state.
func (g *Game) setParams(p params, n int) {
	g.p = p
	g.mapF = fixed.FromInt(int64(p.mapSize))
	g.income = fixed.FromRatio(int64(p.incomeMilli), 1000)
	g.players = make([]player, n)
	for i := range g.players {
		g.players[i].baseX, g.players[i].baseY = basePos(int64(p.mapSize), int64(i), int64(n))
	}
}

// basePos places base i of n evenly along the perimeter of a square inset by 1/8 of the
// map, clockwise from the top-left corner: two players get opposite corners, four get
// the four corners, eight the corners and edge midpoints.
func basePos(mapSize, i, n int64) (x, y fixed.F) {
	m := fixed.FromInt(mapSize / 8)
	side := fixed.FromInt(mapSize - 2*(mapSize/8))
	d := fixed.F(int64(4*side) * i / n)
	switch {
	case d < side:
		return m + d, m
	case d < 2*side:
		return m + side, m + d - side
	case d < 3*side:
		return m + side - (d - 2*side), m + side
	}
	return m, m + side - (d - 3*side)
}

// spawn adds a unit of kind k for player id at its base. The caller checked the limits.
func (g *Game) spawn(id uint32, k skirmishv1.Kind) {
	p := &g.players[id-1]
	st, _ := StatsOf(k)
	// Spawn slots form a 5x5 grid 1.5 units apart centred on the base.
	slot := int64(p.spawned % 25)
	step := fixed.One + fixed.Half
	x := p.baseX + fixed.F(slot%5-2)*step
	y := p.baseY + fixed.F(slot/5-2)*step
	g.units = append(g.units, Unit{
		ID: g.nextID, Owner: id, Kind: k, HP: st.HP,
		X: x.Clamp(0, g.mapF), Y: y.Clamp(0, g.mapF),
	})
	g.nextID++
	p.spawned++
	p.units++
	g.c.Spawned++
}

// Tick returns the number of ticks stepped so far.
func (g *Game) Tick() uint64 { return g.tick }

// Players returns the number of player slots; player ids are 1..Players().
func (g *Game) Players() int { return len(g.players) }

// MapSize returns the side of the square map; coordinates are in [0, MapSize()].
func (g *Game) MapSize() fixed.F { return g.mapF }

// Player returns a copy of player id's state; ok is false for an id outside 1..Players().
func (g *Game) Player(id uint32) (p Player, ok bool) {
	if id < 1 || int(id) > len(g.players) {
		return Player{}, false
	}
	q := &g.players[id-1]
	return Player{ID: id, Resource: q.resource, Out: q.out, BaseX: q.baseX, BaseY: q.baseY, Units: q.units, Spawned: q.spawned}, true
}

// NumUnits returns the number of living units.
func (g *Game) NumUnits() int { return len(g.units) }

// Units yields a copy of every living unit in increasing id order. Do not step the game
// while iterating.
func (g *Game) Units() iter.Seq[Unit] {
	return func(yield func(Unit) bool) {
		for i := range g.units {
			if !yield(g.units[i]) {
				return
			}
		}
	}
}

// UnitByID returns a copy of the living unit with id; ok is false if there is none.
func (g *Game) UnitByID(id uint32) (u Unit, ok bool) {
	if i := g.find(id); i >= 0 {
		return g.units[i], true
	}
	return Unit{}, false
}

// Counters returns the command and unit counters.
func (g *Game) Counters() Counters { return g.c }

// Outcome reports whether the match is over and its winner (0 if nobody is left).
func (g *Game) Outcome() (over bool, winner uint32) { return g.over, g.winner }

// find returns the index of the unit with id, or -1. Units are sorted by id.
func (g *Game) find(id uint32) int {
	lo, hi := 0, len(g.units)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if g.units[m].ID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(g.units) && g.units[lo].ID == id {
		return lo
	}
	return -1
}
