package skirmish

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// FuzzPayload feeds any bytes as a payload from any player id to two equal games: they
// must never panic and must stay hash-equal.
func FuzzPayload(f *testing.F) {
	f.Add(uint32(1), AppendMove(nil, []uint32{1, 2, 3}, 100, 120))
	f.Add(uint32(1), AppendMove(nil, []uint32{1}, -7, 1<<30))
	f.Add(uint32(2), AppendAttack(nil, []uint32{11, 12}, 1))
	f.Add(uint32(2), AppendStop(nil, []uint32{11}))
	f.Add(uint32(3), AppendSpawn(nil, Soldier))
	f.Add(uint32(3), AppendSpawn(nil, Archer))
	f.Add(uint32(0), AppendSpawn(nil, Archer))
	f.Add(uint32(9), []byte{0xff})
	f.Add(uint32(1), []byte{})
	params, err := proto.Marshal(&skirmishv1.Params{StartResource: 200})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, player uint32, payload []byte) {
		cfg := sim.Config{Seed: 5, Players: 3, Params: params}
		a, err := New(cfg)
		require.NoError(t, err)
		b, err := New(cfg)
		require.NoError(t, err)
		cmds := []sim.Command{{Player: player, Payload: payload}, {Player: player%4 + 1, Payload: payload}}
		for tick := uint64(0); tick < 4; tick++ {
			a.Step(tick, cmds)
			b.Step(tick, cmds)
			require.Equal(t, a.Hash(), b.Hash())
		}
		// The decoder agrees with proto on everything it accepts.
		var o order
		if o.decode(payload) {
			var c skirmishv1.Command
			require.NoError(t, proto.Unmarshal(payload, &c), "the hand decoder accepted what proto refuses")
			checkAgrees(t, &o, &c)
		}
	})
}

// checkAgrees asserts that a decoded order has the fields proto decoded.
func checkAgrees(t *testing.T, o *order, c *skirmishv1.Command) {
	t.Helper()
	units := func(u []uint32) []uint32 {
		if len(u) == 0 {
			return nil
		}
		return u
	}
	switch o.kind {
	case orderMove:
		m := c.GetMove()
		require.NotNil(t, m)
		assert.Equal(t, units(m.GetUnits()), units(o.units))
		assert.Equal(t, m.GetX(), o.x)
		assert.Equal(t, m.GetY(), o.y)
	case orderAttack:
		a := c.GetAttack()
		require.NotNil(t, a)
		assert.Equal(t, units(a.GetUnits()), units(o.units))
		assert.Equal(t, a.GetTarget(), o.target)
	case orderStop:
		s := c.GetStop()
		require.NotNil(t, s)
		assert.Equal(t, units(s.GetUnits()), units(o.units))
	case orderSpawn:
		s := c.GetSpawn()
		require.NotNil(t, s)
		assert.Equal(t, s.GetKind(), o.unit)
	default:
		t.Fatalf("accepted order kind %d", o.kind)
	}
}

// FuzzRestore feeds any bytes to Restore: it must never panic, and a state it accepts
// must snapshot to bytes it accepts again with the same hash, and step without panicking.
func FuzzRestore(f *testing.F) {
	m := newMatch(f, 2, 2, nil)
	f.Add(m.g.Snapshot())
	for m.g.Tick() < 300 {
		m.step()
	}
	f.Add(m.g.Snapshot())
	f.Add([]byte("SKRM\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var g Game
		if g.Restore(b) != nil {
			return
		}
		var again Game
		require.NoError(t, again.Restore(g.Snapshot()))
		require.Equal(t, g.Hash(), again.Hash())
		for tick := range uint64(3) {
			g.Step(tick, nil)
		}
	})
}

func TestAppendersMatchProto(t *testing.T) {
	tests := []struct {
		name string
		cmd  *skirmishv1.Command
		got  []byte
	}{
		{"a move encodes like proto", &skirmishv1.Command{Order: &skirmishv1.Command_Move{Move: &skirmishv1.Move{Units: []uint32{1, 300, 70000}, X: -3, Y: 255}}}, AppendMove(nil, []uint32{1, 300, 70000}, -3, 255)},
		{"an empty move encodes like proto", &skirmishv1.Command{Order: &skirmishv1.Command_Move{Move: &skirmishv1.Move{}}}, AppendMove(nil, nil, 0, 0)},
		{"an attack encodes like proto", &skirmishv1.Command{Order: &skirmishv1.Command_Attack{Attack: &skirmishv1.Attack{Units: []uint32{5}, Target: 9}}}, AppendAttack(nil, []uint32{5}, 9)},
		{"a stop encodes like proto", &skirmishv1.Command{Order: &skirmishv1.Command_Stop{Stop: &skirmishv1.Stop{Units: []uint32{2, 4}}}}, AppendStop(nil, []uint32{2, 4})},
		{"a spawn encodes like proto", &skirmishv1.Command{Order: &skirmishv1.Command_Spawn{Spawn: &skirmishv1.Spawn{Kind: Archer}}}, AppendSpawn(nil, Archer)},
		{"a negative kind encodes like proto", &skirmishv1.Command{Order: &skirmishv1.Command_Spawn{Spawn: &skirmishv1.Spawn{Kind: -2}}}, AppendSpawn(nil, -2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(tt.cmd)
			require.NoError(t, err)
			assert.Equal(t, want, tt.got)
			var o order
			if o.decode(tt.got) {
				checkAgrees(t, &o, tt.cmd)
			}
		})
	}
}
