package wasm_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
)

// BenchmarkVerifySkirmish re-simulates a recorded 20,000-tick skirmish match (4 scripted
// bots) with replay.Verify, once with the native Go sim and once with the skirmish
// module — metered (the default) and not (Options.Unmetered) — and reports ticks per
// second. The module's ratio to native is what
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
	fast, err := wasm.Load(simbuild.Module(b, simbuild.Skirmish), &wasm.Options{Unmetered: true})
	if err != nil {
		b.Fatal(err)
	}
	defer fast.Close()
	b.Logf("module %s: %d bytes", mod, mod.Size)
	native := func(cfg sim.Config) (sim.Sim, error) { return skirmish.New(cfg) }
	for _, bm := range []struct {
		name    string
		factory sim.Factory
	}{{"native", native}, {"module", mod.New}, {"module-unmetered", fast.New}} {
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

// BenchmarkHashChainStep steps the hash chain natively and as each module (AssemblyScript,
// Rust, C, Go), metered and not, over the same 1,024 random ticks (0 to 6 commands of 0
// to 40 bytes): the cost of the module boundary, of each toolchain and of metering, per
// tick.
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
	for _, file := range []string{simbuild.HashChainAS, simbuild.HashChainRust, simbuild.HashChainC, simbuild.HashChainGo} {
		for _, unmetered := range []bool{false, true} {
			mod, err := wasm.Load(simbuild.Module(b, file), &wasm.Options{Unmetered: unmetered})
			if err != nil {
				b.Fatal(err)
			}
			defer mod.Close()
			name := strings.TrimSuffix(file, ".wasm")
			if unmetered {
				name += "-unmetered"
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

// BenchmarkStepRuntimes steps each sim with no commands (hashing every 30 ticks, as a
// 30 Hz match with checksums every second) natively, in wazero metered (as shipped:
// "wazero") and not ("wazero-no-time-bound", the name kept so runs compare across
// versions: no bound of any kind), and in Node's V8 (testdata/step-idle.mjs, the module
// as built; skipped without node): the same module file in two engines, so what Go's
// WebAssembly output costs and what wazero's code and the metering cost come apart.
// Each run reports ticks/s and its ratio to native in that run.
func BenchmarkStepRuntimes(b *testing.B) {
	const hashEvery = 30
	native := map[string]sim.Factory{
		simbuild.Skirmish:    func(cfg sim.Config) (sim.Sim, error) { return skirmish.New(cfg) },
		simbuild.HashChainAS: func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil },
	}
	cfg := sim.Config{Seed: 1, Players: 4}
	for _, file := range []string{simbuild.Skirmish, simbuild.HashChainAS} {
		path := simbuild.Module(b, file)
		var nativeRate float64
		report := func(b *testing.B, rate float64) {
			b.ReportMetric(rate, "ticks/s")
			if nativeRate > 0 {
				b.ReportMetric(nativeRate/rate, "x-native")
			}
		}
		run := func(name string, newSim func() (sim.Sim, error)) {
			b.Run(strings.TrimSuffix(file, ".wasm")+"/"+name, func(b *testing.B) {
				s, err := newSim()
				if err != nil {
					b.Fatal(err)
				}
				tick := uint64(0)
				for b.Loop() {
					s.Step(tick, nil)
					if tick%hashEvery == 0 {
						s.Hash()
					}
					tick++
				}
				if fail, ok := s.(sim.Failer); ok && fail.Err() != nil {
					b.Fatal(fail.Err())
				}
				rate := float64(b.N) / b.Elapsed().Seconds()
				if name == "native" {
					nativeRate = rate
				}
				report(b, rate)
			})
		}
		run("native", func() (sim.Sim, error) { return native[file](cfg) })
		for _, unmetered := range []bool{false, true} {
			mod, err := wasm.Load(path, &wasm.Options{Unmetered: unmetered})
			if err != nil {
				b.Fatal(err)
			}
			defer mod.Close()
			name := "wazero"
			if unmetered {
				name += "-no-time-bound"
			}
			run(name, func() (sim.Sim, error) { return mod.New(cfg) })
		}
		b.Run(strings.TrimSuffix(file, ".wasm")+"/node", func(b *testing.B) {
			node := crossarch.Need(b, "node", "apt-get install nodejs")
			ticks := max(b.N, 1000)
			out, err := exec.Command(node, "--no-warnings", filepath.Join("testdata", "step-idle.mjs"), path,
				strconv.Itoa(ticks), strconv.Itoa(hashEvery)).CombinedOutput()
			if err != nil {
				b.Fatalf("node: %v: %s", err, out)
			}
			var rate float64
			if _, err := fmt.Sscanf(string(out), "ticks/s %g", &rate); err != nil {
				b.Fatalf("node printed %q: %v", out, err)
			}
			b.ReportMetric(1e9/rate, "ns/op")
			report(b, rate)
		})
	}
}
