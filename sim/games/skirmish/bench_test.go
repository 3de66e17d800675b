package skirmish

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

// bench8x50 returns an 8-player game with 50 soldiers each, the armies of neighbours 1-2,
// 3-4, 5-6 and 7-8 ordered at each other (they march, meet and fight), a snapshot of it
// and the commands of a tick.
func bench8x50(b *testing.B) (*Game, []byte, []sim.Command) {
	g, err := New(sim.Config{Seed: 1, Players: 8, Params: []byte{0x10, 50}}) // start_units 50
	require.NoError(b, err)
	var orders []sim.Command
	for p := uint32(1); p <= 8; p++ {
		ids := make([]uint32, 50)
		for i := range ids {
			ids[i] = (p-1)*50 + uint32(i) + 1
		}
		orders = append(orders, sim.Command{Player: p, Payload: AppendAttack(nil, ids, (p-1^1)*50+1)})
	}
	g.Step(0, orders)
	// Per tick: a refused spawn and a stop of one unit, both valid payloads to decode.
	cmds := []sim.Command{{Player: 1, Payload: AppendSpawn(nil, Soldier)}, {Player: 2, Payload: AppendStop(nil, []uint32{60})}}
	return g, g.Snapshot(), cmds
}

func BenchmarkStep8x50(b *testing.B) {
	g, snap, cmds := bench8x50(b)
	b.ReportAllocs()
	units := 0
	i := 0
	for b.Loop() {
		if i%300 == 0 { // restart: march, meeting and battle take about 300 ticks
			b.StopTimer()
			require.NoError(b, g.Restore(snap))
			b.StartTimer()
		}
		g.Step(g.Tick(), cmds)
		units += g.NumUnits()
		i++
	}
	b.ReportMetric(float64(units)/float64(i), "units/tick")
}

func BenchmarkStep8x50Idle(b *testing.B) {
	g, err := New(sim.Config{Seed: 1, Players: 8, Params: []byte{0x10, 50}})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		g.Step(g.Tick(), nil)
	}
}

func BenchmarkHash(b *testing.B) {
	g, _, _ := bench8x50(b)
	b.ReportAllocs()
	for b.Loop() {
		g.Hash()
	}
}

func BenchmarkSnapshot(b *testing.B) {
	g, _, _ := bench8x50(b)
	b.ReportAllocs()
	for b.Loop() {
		g.Snapshot()
	}
}
