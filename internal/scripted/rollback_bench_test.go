package scripted_test

import (
	"testing"
	"time"

	"github.com/tickrelay/tickrelay/internal/scripted"
	"github.com/tickrelay/tickrelay/internal/simbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/skirmish"
	"github.com/tickrelay/tickrelay/sim/wasm"
)

// BenchmarkRollback8 measures what a predicting player pays for a rollback of the full
// default window (8 ticks) in a live 4-player skirmish, natively and as a module: the
// confirmed state's snapshot, its restore into the head, and 8 ticks stepped again. The
// "tick-%" metric is that against a 30 Hz tick (33.3 ms); the prediction issue's bound is
// 25 %.
//
//	go test -run - -bench Rollback8 ./internal/scripted
func BenchmarkRollback8(b *testing.B) {
	const at = 3000 // a live game: units on the map, fights
	m, err := scripted.New(scripted.Options{Seed: 7, Players: 4})
	if err != nil {
		b.Fatal(err)
	}
	var state []byte
	for tick := range uint64(at) {
		if _, err := m.Next(); err != nil {
			b.Fatal(err)
		}
		if tick == at-1 {
			state = m.Sim().(sim.Snapshotter).Snapshot()
		}
	}
	cfg := sim.Config{Seed: 7, Players: 4}
	run := func(b *testing.B, newSim func() (sim.Sim, error)) {
		conf, err := newSim()
		if err != nil {
			b.Fatal(err)
		}
		defer sim.Close(conf)
		hs, err := newSim()
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range []sim.Sim{conf, hs} {
			if err := s.(sim.Snapshotter).Restore(state); err != nil {
				b.Fatal(err)
			}
		}
		h, err := lockstep.NewHead(hs, conf, at, lockstep.HeadOptions{Me: 1, Players: 4, Predict: lockstep.PredictNone})
		if err != nil {
			b.Fatal(err)
		}
		defer sim.Close(hs)
		if err := h.Advance(at + lockstep.DefaultPredictWindow - 1); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for b.Loop() {
			if err := h.Rebase(); err != nil {
				b.Fatal(err)
			}
		}
		per := time.Since(t0) / time.Duration(b.N)
		b.ReportMetric(float64(per.Microseconds()), "µs/rollback")
		b.ReportMetric(float64(per)/float64(time.Second/30)*100, "tick-%")
	}
	b.Run("native", func(b *testing.B) { run(b, func() (sim.Sim, error) { return skirmish.New(cfg) }) })
	b.Run("module", func(b *testing.B) {
		mod, err := wasm.Load(simbuild.Module(b, simbuild.Skirmish), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer mod.Close()
		run(b, func() (sim.Sim, error) { return mod.New(cfg) })
	})
}
