package wasm_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tickrelay/tickrelay/internal/scripted"
	"github.com/tickrelay/tickrelay/internal/simbuild"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/hashchain"
	"github.com/tickrelay/tickrelay/sim/skirmish"
	"github.com/tickrelay/tickrelay/sim/wasm"
)

// BenchmarkVerifySkirmish re-simulates a recorded 20,000-tick skirmish match (4 scripted
// bots) with replay.Verify, once with the native Go sim and once with the skirmish
// module — with every call bounded (the default) and without (Options.NoTimeBound) — and
// reports ticks per second. The module's ratio to native is what
// docs/performance.md records (target: at most 3x). Building the instance is inside the
// loop (a verify builds one), compiling the module is not (a tool compiles it once).
func BenchmarkVerifySkirmish(b *testing.B) {
	var file bytes.Buffer
	_, err := scripted.Record(&file, scripted.RecordOptions{Options: scripted.Options{Seed: 1, Players: 4}, Ticks: 20000})
	if err != nil {
		b.Fatal(err)
	}
	rp, err := replay.Load(bytes.NewReader(file.Bytes()))
	if err != nil {
		b.Fatal(err)
	}
	mod, err := wasm.Load(simbuild.Module(b, simbuild.Skirmish), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close()
	fast, err := wasm.Load(simbuild.Module(b, simbuild.Skirmish), &wasm.Options{NoTimeBound: true})
	if err != nil {
		b.Fatal(err)
	}
	defer fast.Close()
	b.Logf("module %s: %d bytes", mod, mod.Size)
	native := func(cfg sim.Config) (sim.Sim, error) { return skirmish.New(cfg) }
	for _, bm := range []struct {
		name    string
		factory sim.Factory
	}{{"native", native}, {"module", mod.New}, {"module-no-time-bound", fast.New}} {
		b.Run(bm.name, func(b *testing.B) {
			if err := sim.Provide(skirmish.Name, skirmish.Version, bm.factory); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = sim.Provide(skirmish.Name, skirmish.Version, native) }()
			for b.Loop() {
				rep, err := replay.Verify(rp, replay.VerifyOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Ticks != rp.Ticks {
					b.Fatalf("verified %d of %d ticks", rep.Ticks, rp.Ticks)
				}
			}
			b.ReportMetric(float64(rp.Ticks)*float64(b.N)/b.Elapsed().Seconds(), "ticks/s")
		})
	}
}

// BenchmarkHashChainStep steps the hash chain natively, as the AssemblyScript module
// (2.6 KB) and as the Go module, bounded and not, over the same 1,024 random ticks (0 to
// 6 commands of 0 to 40 bytes): the cost of the module boundary and of each toolchain,
// per tick.
func BenchmarkHashChainStep(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	ticks := make([][]sim.Command, 1024)
	for i := range ticks {
		ticks[i] = randomTick(r, 4)
	}
	cfg := sim.Config{Seed: 1, Players: 4}
	factories := []struct {
		name string
		new  sim.Factory
	}{{"native", func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }}}
	for _, file := range []string{simbuild.HashChainAS, simbuild.HashChainGo} {
		for _, unbounded := range []bool{false, true} {
			mod, err := wasm.Load(simbuild.Module(b, file), &wasm.Options{NoTimeBound: unbounded})
			if err != nil {
				b.Fatal(err)
			}
			defer mod.Close()
			name := strings.TrimSuffix(file, ".wasm")
			if unbounded {
				name += "-no-time-bound"
			}
			factories = append(factories, struct {
				name string
				new  sim.Factory
			}{name, mod.New})
		}
	}
	for _, f := range factories {
		b.Run(f.name, func(b *testing.B) {
			s, err := f.new(cfg)
			if err != nil {
				b.Fatal(err)
			}
			tick := uint64(0)
			for b.Loop() {
				s.Step(tick, ticks[tick%1024])
				tick++
			}
			if fail, ok := s.(sim.Failer); ok && fail.Err() != nil {
				b.Fatal(fail.Err())
			}
		})
	}
}
