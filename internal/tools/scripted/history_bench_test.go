package scripted_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

// BenchmarkForensicsHistoryCost measures what a player pays on the normal path to be able
// to answer desync probes (lockstep.History: a copy of every frame, a snapshot at every
// checkpoint), against stepping the sim alone, for skirmish natively and as a module, in
// one run: the ratio is the "history-%" metric (the forensics issue's bound is 5 %).
//
//	go test -run - -bench ForensicsHistoryCost ./internal/tools/scripted
func BenchmarkForensicsHistoryCost(b *testing.B) {
	const ticks = 3000
	m, err := scripted.New(scripted.Options{Seed: 7, Players: 4})
	if err != nil {
		b.Fatal(err)
	}
	frames := make([]lockstep.Frame, 0, ticks)
	for range ticks {
		st, err := m.Next()
		if err != nil {
			b.Fatal(err)
		}
		f := st.Frame
		f.Commands = slices.Clone(f.Commands)
		for i := range f.Commands {
			f.Commands[i].Payload = slices.Clone(f.Commands[i].Payload)
		}
		frames = append(frames, f)
	}
	cfg := sim.Config{Seed: 7, Players: 4}
	native := func() (sim.Sim, error) { return skirmish.New(cfg) }
	run := func(b *testing.B, newSim func() (sim.Sim, error)) {
		var step, hist, snapshots time.Duration
		for b.Loop() {
			s, err := newSim()
			if err != nil {
				b.Fatal(err)
			}
			p := lockstep.NewPeer(s, lockstep.PeerOptions{})
			h := lockstep.NewHistory(newSim, 0)
			// The steps, timed whole; each checkpoint's snapshot, timed alone.
			t0 := time.Now()
			var snaps time.Duration
			for _, f := range frames {
				c, report, err := p.Apply(f)
				if err != nil {
					b.Fatal(err)
				}
				if report {
					t := time.Now()
					h.Checkpoint(c.Tick, s)
					snaps += time.Since(t)
				}
			}
			step += time.Since(t0) - snaps
			// The frames' copies, timed whole on a History of their own.
			hf := lockstep.NewHistory(newSim, 0)
			t1 := time.Now()
			for _, f := range frames {
				hf.Frame(f)
			}
			hist += snaps + time.Since(t1)
			snapshots += snaps
		}
		b.ReportMetric(float64(hist)/float64(step)*100, "history-%")
		b.ReportMetric(float64(snapshots)/float64(step)*100, "snapshots-%")
		b.ReportMetric(float64(step.Nanoseconds())/float64(b.N*ticks), "step-ns/tick")
	}
	b.Run("native", func(b *testing.B) { run(b, native) })
	b.Run("module", func(b *testing.B) {
		mod, err := wasm.Load(simbuild.Module(b, simbuild.Skirmish), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer mod.Close()
		run(b, func() (sim.Sim, error) { return mod.New(cfg) })
	})
}
