package meter_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// Instructions the tests' functions need beyond wasmbuild's.
var (
	loop     = []byte{0x03, 0x40}
	end      = []byte{0x0b}
	i32Sub   = []byte{0x6b}
	i32Add   = []byte{0x6a}
	brIf0    = []byte{0x0d, 0x00}
	ret      = []byte{0x0f}
	memFill  = []byte{0xfc, 0x0b, 0x00}
	localTee = func(i uint32) []byte { return U32([]byte{0x22}, i) }
	localSet = func(i uint32) []byte { return U32([]byte{0x21}, i) }
	i32      = []ValType{I32}
)

// spin(n) counts n down to 0 in a loop: 3 instructions outside the loop (loop,
// local.get, end), 6 in it (local.get, i32.const, i32.sub, local.tee, br_if, end), so it
// charges 3 + 6n.
var spin = Func{Export: "spin", Params: i32, Results: i32, Body: Cat(
	loop, LocalGet(0), I32Const(1), i32Sub, localTee(0), brIf0, end, LocalGet(0))}

// add(a, b) is a leaf: 3 instructions with its end, charged to its callers.
var add = Func{Export: "add", Params: []ValType{I32, I32}, Results: i32, Body: Cat(LocalGet(0), LocalGet(1), i32Add)}

// module has spin, add (function 1), twice (which calls add, then returns early), fill
// (memory.fill of n bytes) and forever.
func module() []byte {
	return Module{MemoryPages: 1, Funcs: []Func{
		spin,
		add,
		{Export: "twice", Params: i32, Results: i32, Locals: i32, Body: Cat(
			LocalGet(0), LocalGet(0), Call(1), localSet(1), LocalGet(1), ret, I32Const(7))},
		{Export: "fill", Params: i32, Results: i32, Body: Cat(I32Const(0), I32Const(1), LocalGet(0), memFill, LocalGet(0))},
		{Export: "forever", Results: i32, Body: Cat(Forever, I32Const(0))},
		// pick(n): a br_table whose first label leaves the function, the labels after it
		// read too: block (result i32) 7, n, br_table [1 (the function), 0] default 0, end;
		// then spin(7+1).
		{Export: "pick", Params: i32, Results: i32, Body: Cat(
			[]byte{0x02, 0x7f}, I32Const(7), LocalGet(0), []byte{0x0e, 0x02, 0x01, 0x00, 0x00}, end,
			I32Const(1), i32Add, Call(0))},
	}}.Bytes()
}

type instance struct {
	t    *testing.T
	mod  api.Module
	fuel api.MutableGlobal
}

func instantiate(t *testing.T, wasm []byte) *instance {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	mod, err := rt.Instantiate(ctx, wasm)
	require.NoError(t, err)
	in := &instance{t: t, mod: mod}
	if g := mod.ExportedGlobal(abi.ExportFuel); g != nil {
		in.fuel = g.(api.MutableGlobal)
	}
	return in
}

// call runs fn(args) with budget and returns its result, the fuel it charged and its
// error.
func (in *instance) call(budget uint64, fn string, args ...uint64) (res, charged uint64, err error) {
	in.fuel.Set(budget)
	out, err := in.mod.ExportedFunction(fn).Call(context.Background(), args...)
	charged = budget - in.fuel.Get()
	if len(out) > 0 {
		res = out[0]
	}
	return res, charged, err
}

func TestAMeteredModuleComputesTheSameAndChargesWhatTheCostModelSays(t *testing.T) {
	plain := instantiate(t, module())
	metered, err := meter.Meter(module())
	require.NoError(t, err)
	in := instantiate(t, metered)
	assert.Equal(t, uint64(meter.InitFuel), in.fuel.Get(), "the counter starts at the instantiation's budget")

	for _, tt := range []struct {
		fn      string
		arg     uint64
		charged uint64
	}{
		{"spin", 1, 3 + 6},
		{"spin", 100, 3 + 600},
		// twice: 8 instructions and its end, plus add's 3 (a leaf, charged by its caller),
		// all charged at entry although the return skips two of them.
		{"twice", 21, 9 + 3},
		// fill: 5 instructions and its end, plus 1 per 64 bytes filled.
		{"fill", 64 * 100, 6 + 100},
		{"fill", 63, 6},
		{"add", 2, 0}, // a leaf called by the host runs free: it ends by itself
		// pick: its 9 instructions, then spin(8) charges its own 3 + 6*8 (not a leaf).
		{"pick", 1, 9 + 3 + 6*8},
		{"pick", 0, 9}, // leaves by the br_table, with 7, before the call
	} {
		args := []uint64{tt.arg}
		if tt.fn == "add" {
			args = append(args, 3)
		}
		want, err := plain.mod.ExportedFunction(tt.fn).Call(context.Background(), args...)
		require.NoError(t, err)
		got, charged, err := in.call(1000, tt.fn, args...)
		require.NoError(t, err, tt.fn)
		assert.Equal(t, want[0], got, "%s(%d) computes what it did", tt.fn, tt.arg)
		assert.Equal(t, tt.charged, charged, "%s(%d) charges", tt.fn, tt.arg)
	}
}

func TestALoopThatNeverEndsRunsOutAtTheSameInstructionEveryTime(t *testing.T) {
	metered, err := meter.Meter(module())
	require.NoError(t, err)
	// forever charges 3 at entry (loop, i32.const, end) and 2 per pass (br, end): from
	// 101, it is at 98, then 96 ... 0, and the 50th pass takes it to -2 and traps.
	for range 2 {
		in := instantiate(t, metered)
		_, _, err := in.call(101, "forever")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "unreachable")
		assert.Equal(t, int64(-2), int64(in.fuel.Get()), "the counter says where it stopped")
	}
	in := instantiate(t, metered)
	_, _, err = in.call(8, "spin", 1)
	require.Error(t, err, "spin(1) needs 9")
	assert.Equal(t, int64(-1), int64(in.fuel.Get()))
	_, charged, err := in.call(9, "spin", 1)
	require.NoError(t, err, "9 is enough")
	assert.Equal(t, uint64(9), charged)
}

func TestMeteringIsDeterministicAndRefusesAModuleMeteredBefore(t *testing.T) {
	a, err := meter.Meter(module())
	require.NoError(t, err)
	b, err := meter.Meter(module())
	require.NoError(t, err)
	assert.Equal(t, a, b)
	_, err = meter.Meter(a)
	require.ErrorIs(t, err, meter.ErrModule)
	assert.Contains(t, err.Error(), "export section")
	assert.Contains(t, err.Error(), "it exports tickrelay_fuel already")
}

func TestAModuleThatCannotBeMeteredGetsAnErrorNamingTheSection(t *testing.T) {
	good := module()
	codeAt := bytes.Index(good, []byte{0x0a}) // the code section id comes after the exports
	for _, tt := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"not WebAssembly", []byte("not wasm at all"), "does not start as a WebAssembly"},
		{"cut short", good[:len(good)-3], "code section"},
		{"an unknown opcode", func() []byte {
			m := Module{Funcs: []Func{{Export: "f", Body: []byte{0xfe, 0x00}}}, NoMemory: true}.Bytes()
			return m
		}(), "function 0 (of 1 defined): opcode 0xfe at byte 1 is not WebAssembly 2.0"},
		{"a section out of order", append(append([]byte(nil), good...), 0x01, 0x01, 0x00), "type section"},
		{"an unknown section", append(append([]byte(nil), good...), 0x0d, 0x00), "section 13"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := meter.Meter(tt.wasm)
			require.ErrorIs(t, err, meter.ErrModule)
			assert.Contains(t, err.Error(), tt.want)
			t.Log(err)
		})
	}
	require.Positive(t, codeAt)
}

// FuzzMeter checks that metering any bytes never panics, refuses with ErrModule, and
// makes of what it accepts a module it refuses to meter again (it carries the counter).
// It does not compile what it makes: a runtime reading hostile section counts may
// allocate for them (FuzzMeterCode compiles).
func FuzzMeter(f *testing.F) {
	f.Add(module())
	f.Add(Module{MemoryPages: 1, Funcs: []Func{{Export: "e", Results: i32, Body: I32Const(1)}}}.Bytes())
	f.Add(Module{Imports: []Import{{Module: abi.WASIModule, Name: "proc_exit", Params: i32}}, MemoryPages: 1,
		Funcs: []Func{{Export: "e", Results: i32, Body: Cat(I32Const(1), Call(0), I32Const(0))}}}.Bytes())
	f.Fuzz(func(t *testing.T, wasm []byte) {
		metered, err := meter.Meter(wasm)
		if err != nil {
			if !errors.Is(err, meter.ErrModule) {
				t.Fatalf("an error that is not ErrModule: %v", err)
			}
			return
		}
		if _, err := meter.Meter(metered); !errors.Is(err, meter.ErrModule) {
			t.Fatalf("a metered module metered again: %v", err)
		}
	})
}

// FuzzMeterCode meters modules whose one function (i32, i32) -> i32 has the fuzzed
// body: when wazero accepts the module, it accepts the metered one, and both compute the
// same, or both trap. (That every valid module is metered is the real modules' tests'.)
func FuzzMeterCode(f *testing.F) {
	for _, body := range [][]byte{
		spin.Body, add.Body, Cat(LocalGet(0), LocalGet(1), Call(0)), Cat(Forever, I32Const(0)),
		Cat(I32Const(0), I32Const(1), LocalGet(0), memFill, LocalGet(0)),
		Cat(loop, LocalGet(0), I32Const(1), i32Sub, localTee(0), brIf0, end, LocalGet(0), ret),
		// a br_table whose first label leaves the function (pick's)
		Cat([]byte{0x02, 0x7f}, I32Const(7), LocalGet(0), []byte{0x0e, 0x02, 0x01, 0x00, 0x00}, end, I32Const(1), i32Add),
	} {
		f.Add(append(append([]byte{0x00}, body...), end...)) // no locals, the body, its end
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
	defer rt.Close(ctx)
	// The module as it was may loop forever: it runs with a time bound, and a run that
	// meets it is not compared.
	timed := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2).WithCloseOnContextDone(true))
	defer timed.Close(ctx)
	f.Fuzz(func(t *testing.T, code []byte) {
		if len(code) > 1024 {
			return
		}
		wasm := Module{MemoryPages: 1, MaxPages: 1, Funcs: []Func{{Export: "f", Params: []ValType{I32, I32}, Results: i32, Raw: code}}}.Bytes()
		// Metering first, as the host does: it refuses the declared counts a runtime
		// would allocate for (locals, entries).
		metered, err := meter.Meter(wasm)
		if err != nil {
			return
		}
		c, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return
		}
		_ = c.Close(ctx)
		c, err = rt.CompileModule(ctx, metered)
		if err != nil {
			t.Fatalf("a valid module metered is not valid: %v", err)
		}
		_ = c.Close(ctx)
		run := func(rt wazero.Runtime, wasm []byte) ([]uint64, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			mod, err := rt.Instantiate(ctx, wasm)
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(ctx)
			if g := mod.ExportedGlobal(abi.ExportFuel); g != nil {
				g.(api.MutableGlobal).Set(1 << 40) // more than a second's worth
			}
			return mod.ExportedFunction("f").Call(ctx, 3, 5)
		}
		want, werr := run(timed, wasm)
		if werr != nil && strings.Contains(werr.Error(), "deadline") {
			return
		}
		got, gerr := run(rt, metered)
		if werr != nil || gerr != nil {
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("unmetered: %v; metered: %v", werr, gerr)
			}
			return
		}
		if want[0] != got[0] {
			t.Fatalf("unmetered %d, metered %d", want[0], got[0])
		}
	})
}
