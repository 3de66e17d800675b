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

// BenchmarkJudgeFromShadow measures what the relay's arbiter pays to judge a desync of a
// live 4-player skirmish, natively and as a module, in one run:
//
//   - "shadow-ms": from the relay's shadow (docs/forensics.md) in its worst case — its
//     state two minutes of match clock (3600 ticks at 30 Hz) before the desync: build
//     the sim, restore the state, re-simulate the frames since, hash, snapshot (to heal).
//     This does not grow with the match's length.
//
//   - "from0-2h-ms": what re-simulating a 2-hour match from tick 0 would take, at the
//     same per-tick cost (what the arbiter did before the shadow).
//
//   - "shadow-%core": what a shadow costs a match over its life, re-simulating each tick
//     once, as a share of one core at 30 Hz.
//
//   - "log-KiB", "state-B": what it holds at most: the frames of those two minutes, and
//     its state.
//
//     go test -run - -bench JudgeFromShadow ./internal/tools/scripted
func BenchmarkJudgeFromShadow(b *testing.B) {
	const from, to = 1800, 5400 // the shadow's state after tick from-1; the desync at to-1
	m, err := scripted.New(scripted.Options{Seed: 7, Players: 4})
	if err != nil {
		b.Fatal(err)
	}
	var log lockstep.FrameLog
	var state []byte
	for tick := range uint64(to) {
		st, err := m.Next()
		if err != nil {
			b.Fatal(err)
		}
		if tick >= from {
			log.Add(st.Frame)
		}
		if tick == from-1 {
			state = slices.Clone(m.Sim().(sim.Snapshotter).Snapshot())
		}
	}
	if over, _ := m.Game().Outcome(); over {
		b.Fatal("the game ended: the ticks measured would not be a live game's")
	}
	cfg := sim.Config{Seed: 7, Players: 4}
	run := func(b *testing.B, newSim func() (sim.Sim, error)) {
		var total time.Duration
		for b.Loop() {
			t0 := time.Now()
			s, err := newSim()
			if err != nil {
				b.Fatal(err)
			}
			p := lockstep.NewPeer(s, lockstep.PeerOptions{})
			if err := p.Restore(state, from-1); err != nil {
				b.Fatal(err)
			}
			if err := log.Replay(p, to-1, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := sim.HashOf(s); err != nil {
				b.Fatal(err)
			}
			_ = s.(sim.Snapshotter).Snapshot()
			sim.Close(s)
			total += time.Since(t0)
		}
		perVerdict := total / time.Duration(b.N)
		perTick := perVerdict / (to - from)
		b.ReportMetric(float64(perVerdict.Microseconds())/1000, "shadow-ms")
		b.ReportMetric(float64((perTick * 216000).Milliseconds()), "from0-2h-ms")
		b.ReportMetric(float64(perTick.Nanoseconds())/float64((time.Second/30).Nanoseconds())*100, "shadow-%core")
		b.ReportMetric(float64(log.Bytes())/1024, "log-KiB")
		b.ReportMetric(float64(len(state)), "state-B")
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
