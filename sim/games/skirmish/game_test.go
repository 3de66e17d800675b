package skirmish

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/kit/fixed"
)

func encodeParams(t *testing.T, p *skirmishv1.Params) []byte {
	t.Helper()
	b, err := proto.Marshal(p)
	require.NoError(t, err)
	return b
}

func newGame(t *testing.T, players int, p *skirmishv1.Params) *Game {
	t.Helper()
	var params []byte
	if p != nil {
		params = encodeParams(t, p)
	}
	g, err := New(sim.Config{Seed: 1, Players: players, Params: params})
	require.NoError(t, err)
	return g
}

func TestNew(t *testing.T) {
	t.Run("defaults give ten soldiers per player at their bases", func(t *testing.T) {
		g := newGame(t, 4, nil)
		assert.Equal(t, 4, g.Players())
		assert.Equal(t, 40, g.NumUnits())
		assert.Equal(t, fixed.FromInt(256), g.MapSize())
		for id := uint32(1); id <= 4; id++ {
			p, ok := g.Player(id)
			require.True(t, ok)
			assert.Equal(t, uint32(10), p.Units)
			assert.Equal(t, fixed.F(0), p.Resource)
			assert.False(t, p.Out)
		}
		var ids []uint32
		for u := range g.Units() {
			ids = append(ids, u.ID)
			assert.Equal(t, Soldier, u.Kind)
			assert.Equal(t, int32(100), u.HP)
		}
		assert.IsIncreasing(t, ids)
		over, winner := g.Outcome()
		assert.False(t, over)
		assert.Zero(t, winner)
	})
	t.Run("four bases sit at the corners of the inset square", func(t *testing.T) {
		g := newGame(t, 4, nil)
		want := [][2]int64{{32, 32}, {224, 32}, {224, 224}, {32, 224}}
		for i, w := range want {
			p, _ := g.Player(uint32(i + 1))
			assert.Equal(t, w, [2]int64{p.BaseX.Int(), p.BaseY.Int()}, "player %d", i+1)
		}
	})
	t.Run("params override the defaults", func(t *testing.T) {
		g := newGame(t, 2, &skirmishv1.Params{MapSize: 64, StartUnits: 3, StartResource: 70, IncomeMilli: 1000})
		assert.Equal(t, fixed.FromInt(64), g.MapSize())
		assert.Equal(t, 6, g.NumUnits())
		p, _ := g.Player(1)
		assert.Equal(t, fixed.FromInt(70), p.Resource)
		g.Step(0, nil)
		p, _ = g.Player(1)
		assert.Equal(t, fixed.FromInt(71), p.Resource)
	})
	bad := []struct {
		name    string
		players int
		params  []byte
	}{
		{"one player is refused", 1, nil},
		{"nine players are refused", 9, nil},
		{"undecodable params are refused", 2, []byte{0xff, 0xff}},
		{"a tiny map is refused", 2, encodeParams(t, &skirmishv1.Params{MapSize: 8})},
		{"a huge map is refused", 2, encodeParams(t, &skirmishv1.Params{MapSize: 1 << 20})},
		{"too many start units are refused", 2, encodeParams(t, &skirmishv1.Params{StartUnits: 201})},
		{"a huge income is refused", 2, encodeParams(t, &skirmishv1.Params{IncomeMilli: 1 << 30})},
		{"a huge start resource is refused", 2, encodeParams(t, &skirmishv1.Params{StartResource: 1 << 30})},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(sim.Config{Players: tt.players, Params: tt.params})
			assert.Nil(t, g)
			assert.ErrorIs(t, err, sim.ErrBadConfig)
		})
	}
	t.Run("the registry builds the game by name and version", func(t *testing.T) {
		s, err := sim.New(Name, Version, sim.Config{Seed: 1, Players: 2})
		require.NoError(t, err)
		assert.IsType(t, &Game{}, s)
		s, err = sim.New(Name, Version, sim.Config{Seed: 1, Players: 9})
		assert.Nil(t, s) // not a typed nil inside the interface
		assert.True(t, errors.Is(err, sim.ErrBadConfig))
	})
	t.Run("equal configs give equal hashes and other seeds other hashes", func(t *testing.T) {
		a, b := newGame(t, 3, nil), newGame(t, 3, nil)
		assert.Equal(t, a.Hash(), b.Hash())
		c, err := New(sim.Config{Seed: 2, Players: 3})
		require.NoError(t, err)
		assert.NotEqual(t, a.Hash(), c.Hash())
	})
}

func TestAccessorsReturnCopies(t *testing.T) {
	g := newGame(t, 2, nil)
	h := g.Hash()
	for u := range g.Units() {
		u.HP = 0
		u.X = 0
	}
	u, ok := g.UnitByID(1)
	require.True(t, ok)
	u.HP = -5
	p, _ := g.Player(1)
	p.Resource = fixed.Max
	assert.Equal(t, h, g.Hash())
	_, ok = g.UnitByID(999)
	assert.False(t, ok)
	_, ok = g.Player(0)
	assert.False(t, ok)
	_, ok = g.Player(3)
	assert.False(t, ok)
}

func TestSubHashes(t *testing.T) {
	a, b := newGame(t, 2, nil), newGame(t, 2, nil)
	names := func(hs []sim.NamedHash) []string {
		var n []string
		for _, h := range hs {
			n = append(n, h.Name)
		}
		return n
	}
	t.Run("the subsystems are named in a fixed order", func(t *testing.T) {
		assert.Equal(t, []string{"match", "players", "units", "rng", "counters"}, names(a.SubHashes()))
	})
	t.Run("a changed unit shows in the units hash only", func(t *testing.T) {
		b.units[0].HP--
		ha, hb := a.SubHashes(), b.SubHashes()
		for i := range ha {
			if ha[i].Name == "units" {
				assert.NotEqual(t, ha[i].Hash, hb[i].Hash)
			} else {
				assert.Equal(t, ha[i].Hash, hb[i].Hash, ha[i].Name)
			}
		}
		assert.NotEqual(t, a.Hash(), b.Hash())
	})
}

func TestRandomPayloadsAreOrdersTheGameReads(t *testing.T) {
	g, err := New(sim.Config{Seed: 2, Players: 4})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(2, 3))
	for tick := range uint64(300) {
		var cmds []sim.Command
		for p := uint32(1); p <= 4; p++ {
			cmds = append(cmds, sim.Command{Player: p, Seq: uint32(tick) + 1, Payload: RandomPayload(r.IntN)})
		}
		g.Step(tick, cmds)
	}
	c := g.Counters()
	assert.Zero(t, c.Malformed, "every random payload decodes")
	assert.Greater(t, c.Applied, uint64(100), "many are orders the game carries out")
	assert.NotZero(t, c.NotOwned+c.BadTarget, "some name units the player does not own, or no unit")
	t.Logf("%+v", c)
}
