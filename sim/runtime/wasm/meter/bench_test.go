package meter_test

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// fib(n) is the recursive Fibonacci: a call per ... call, the case metering costs most
// (a charge at every entry, the counter stored and loaded around every call).
var fib = Func{Export: "fib", Params: i32, Results: i32, Body: Cat(
	LocalGet(0), I32Const(2), []byte{0x49}, // i32.lt_u
	[]byte{0x04, 0x7f}, LocalGet(0), // if (result i32) n
	[]byte{0x05}, // else fib(n-1) + fib(n-2)
	LocalGet(0), I32Const(1), i32Sub, Call(0),
	LocalGet(0), I32Const(2), i32Sub, Call(0), i32Add,
	end)}

// BenchmarkMeteringWorstCases runs the two shapes metering costs most, metered and not,
// in wazero: a tight loop (spin(10000): a charge every 5 instructions) and recursion
// (fib(20): 21,891 calls of a few instructions each). Compare metered/unmetered in one run.
func BenchmarkMeteringWorstCases(b *testing.B) {
	raw := Module{MemoryPages: 1, Funcs: []Func{fib, spin}}.Bytes()
	metered, err := meter.Meter(raw)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	defer rt.Close(ctx)
	for _, c := range []struct {
		fn  string
		arg uint64
	}{{"spin", 10000}, {"fib", 20}} {
		for _, v := range []struct {
			name string
			wasm []byte
		}{{"unmetered", raw}, {"metered", metered}} {
			b.Run(c.fn+"/"+v.name, func(b *testing.B) {
				mod, err := rt.Instantiate(ctx, v.wasm)
				if err != nil {
					b.Fatal(err)
				}
				defer mod.Close(ctx)
				fuel, _ := mod.ExportedGlobal(abi.ExportFuel).(api.MutableGlobal)
				f := mod.ExportedFunction(c.fn)
				for b.Loop() {
					if fuel != nil {
						fuel.Set(1 << 40)
					}
					if _, err := f.Call(ctx, c.arg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
