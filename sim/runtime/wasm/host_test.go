package wasm_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/check/simtest"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// The counter module's memory: its state at 0, its name at 16, its error message at
// 64, its input buffer at 1024.
const (
	counterName = "counter"
	errText     = "too many players"
	bufAt       = 1024
)

// counter is a hand-made module of the ABI: state = seed, and every step
// state = state*31 + tick + count + size. It refuses more than 8 players.
func counter() Module {
	return Module{
		MemoryPages: 1,
		Data:        []Data{{Offset: 16, Bytes: []byte(counterName)}, {Offset: 64, Bytes: []byte(errText)}},
		Funcs: []Func{
			{Export: abi.ExportABI, Results: []ValType{I32}, Body: I32Const(abi.Version)},
			{Export: abi.ExportName, Results: []ValType{I64}, Body: I64Const(Span(16, uint32(len(counterName))))},
			{Export: abi.ExportVersion, Results: []ValType{I32}, Body: I32Const(2)},
			{Export: abi.ExportBuffer, Params: []ValType{I32}, Results: []ValType{I32}, Body: I32Const(bufAt)},
			{Export: abi.ExportInit, Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: Cat(
				I32Const(0), LocalGet(0), I64Store(0),
				LocalGet(1), I32Const(8), []byte{0x4b}, // i32.gt_u
			)},
			{Export: abi.ExportStep, Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: stepBody},
			{Export: abi.ExportHash, Results: []ValType{I64}, Body: Cat(I32Const(0), I64Load(0))},
			{Export: abi.ExportError, Results: []ValType{I64}, Body: I64Const(Span(64, uint32(len(errText))))},
		},
	}
}

var stepBody = Cat(
	I32Const(0),
	I32Const(0), I64Load(0), I64Const(31), I64Mul,
	LocalGet(0), I64Add,
	LocalGet(1), I64ExtendU, I64Add,
	LocalGet(2), I64ExtendU, I64Add,
	I64Store(0),
	I32Const(0),
)

// counterHash is what the counter module's hash must be.
func counterHash(seed uint64, ticks [][]sim.Command) uint64 {
	h := seed
	for t, cmds := range ticks {
		h = h*31 + uint64(t) + uint64(len(cmds)) + uint64(abi.CommandsSize(cmds))
	}
	return h
}

// with returns m with the function exported as name replaced by f (or removed when f
// is nil), or f added when m has none.
func with(m Module, name string, f *Func) Module {
	out := m
	out.Funcs = nil
	found := false
	for _, g := range m.Funcs {
		if g.Export == name {
			found = true
			if f != nil {
				g = *f
				g.Export = name
				out.Funcs = append(out.Funcs, g)
			}
			continue
		}
		out.Funcs = append(out.Funcs, g)
	}
	if !found && f != nil {
		g := *f
		g.Export = name
		out.Funcs = append(out.Funcs, g)
	}
	return out
}

func load(t *testing.T, m Module, opts *wasm.Options) (*wasm.Module, error) {
	t.Helper()
	mod, err := wasm.LoadBytes("test.wasm", m.Bytes(), opts)
	if err == nil {
		t.Cleanup(func() { _ = mod.Close() })
	}
	return mod, err
}

func TestAHandMadeModuleRunsAsASim(t *testing.T) {
	mod, err := load(t, counter(), nil)
	require.NoError(t, err)
	assert.Equal(t, counterName, mod.Name)
	assert.Equal(t, uint32(2), mod.Version)
	assert.Equal(t, "counter version 2 (test.wasm)", mod.String())

	s, err := mod.New(sim.Config{Seed: 5, Players: 2})
	require.NoError(t, err)
	ticks := [][]sim.Command{nil, {{Player: 1, Seq: 1, Payload: []byte("move")}}, nil, {{Player: 1, Seq: 2}, {Player: 2, Seq: 1, Payload: make([]byte, 300)}}}
	p := lockstep.NewPeer(s, lockstep.PeerOptions{})
	for tick, cmds := range ticks {
		_, _, err := p.Apply(lockstep.Frame{Tick: uint64(tick), Commands: cmds})
		require.NoError(t, err)
	}
	assert.Equal(t, counterHash(5, ticks), s.Hash())
	_, snapshots := s.(sim.Snapshotter)
	assert.False(t, snapshots, "no snapshot exports, no Snapshotter")
	over, _ := s.(sim.Ender).Outcome()
	assert.False(t, over, "no outcome export: the match never ends by the sim")
	assert.ErrorIs(t, s.(sim.Dumper).Dump(&bytes.Buffer{}), wasm.ErrNotSupported)
	require.NoError(t, s.(*wasm.Sim).Close())

	t.Run("two instances keep their own state", func(t *testing.T) {
		a, err := mod.New(sim.Config{Seed: 1, Players: 2})
		require.NoError(t, err)
		b, err := mod.New(sim.Config{Seed: 2, Players: 2})
		require.NoError(t, err)
		a.Step(0, nil)
		assert.Equal(t, counterHash(1, [][]sim.Command{nil}), a.Hash())
		assert.Equal(t, uint64(2), b.Hash())
	})
	t.Run("a config it refuses is a bad config with its message", func(t *testing.T) {
		_, err := mod.New(sim.Config{Seed: 1, Players: 9})
		require.ErrorIs(t, err, sim.ErrBadConfig)
		assert.Contains(t, err.Error(), errText)
		assert.Contains(t, err.Error(), "test.wasm: tickrelay_init returned 1")
	})
}

func TestABadModuleIsRefusedAtLoadNamingTheFileAndWhatIsWrong(t *testing.T) {
	i32 := []ValType{I32}
	tests := []struct {
		name   string
		module Module
		want   []string
	}{
		{"not WebAssembly", Module{}, []string{"test.wasm"}}, // replaced by junk below
		{"a missing export", with(counter(), abi.ExportHash, nil), []string{"does not export tickrelay_hash", "() -> (i64)"}},
		{"a mistyped export", with(counter(), abi.ExportHash, &Func{Results: i32, Body: I32Const(1)}),
			[]string{"exports tickrelay_hash as () -> (i32)", "needs () -> (i64)"}},
		{"a mistyped optional export", with(counter(), abi.ExportOutcome, &Func{Results: i32, Body: I32Const(1)}),
			[]string{"tickrelay_outcome as () -> (i32)"}},
		{"a wrong ABI version", with(counter(), abi.ExportABI, &Func{Results: i32, Body: I32Const(2)}),
			[]string{"tickrelay_abi_version returned 2", "ABI version 1"}},
		{"an import the host does not provide", func() Module {
			m := counter()
			m.Imports = []Import{{Module: "env", Name: "abort", Params: []ValType{I32, I32, I32, I32}}}
			return m
		}(), []string{"imports env.abort", "only wasi_snapshot_preview1"}},
		{"a WASI import with the wrong type", func() Module {
			m := counter()
			m.Imports = []Import{{Module: abi.WASIModule, Name: "random_get", Params: []ValType{I64}}}
			return m
		}(), []string{"random_get as (i64) -> ()"}},
		{"a WASI function that does not exist", func() Module {
			m := counter()
			m.Imports = []Import{{Module: abi.WASIModule, Name: "sock_teleport"}}
			return m
		}(), []string{"sock_teleport"}},
		{"no exported memory", func() Module { m := counter(); m.MemoryExport = "mem"; return m }(), []string{`export its memory as "memory"`}},
		{"a bad sim name", func() Module { m := counter(); m.Data[0].Bytes = []byte("my game"); return m }(),
			[]string{"tickrelay_sim_name", "bad simulation name", "letters, digits"}},
		{"a name span outside memory", with(counter(), abi.ExportName, &Func{Results: []ValType{I64}, Body: I64Const(Span(65530, 100))}),
			[]string{"tickrelay_sim_name", "outside a memory of 65536 bytes"}},
		{"version 0", with(counter(), abi.ExportVersion, &Func{Results: i32, Body: I32Const(0)}), []string{"1 or more"}},
		{"snapshot without restore", with(counter(), abi.ExportSnapshot, &Func{Results: []ValType{I64}, Body: I64Const(0)}),
			[]string{"only one of tickrelay_snapshot and tickrelay_restore"}},
		{"a memory larger than the cap", func() Module { m := counter(); m.MemoryPages = 2000; return m }(), []string{"test.wasm"}},
		{"a trap while it starts", with(counter(), abi.ExportReactor, &Func{Body: Unreachable}), []string{"_initialize: wasm error: unreachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.module.Bytes()
			if tt.name == "not WebAssembly" {
				b = []byte("#!/bin/sh\necho not wasm\n")
			}
			_, err := wasm.LoadBytes("test.wasm", b, nil)
			require.ErrorIs(t, err, wasm.ErrLoad)
			t.Log(err)
			for _, w := range append(tt.want, "test.wasm") {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestAModuleThatFailsWhileSteppingIsReportedNeverPanicsNorHangs(t *testing.T) {
	step := func(body []byte) *Func {
		return &Func{Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: body}
	}
	tests := []struct {
		name string
		m    Module
		opts *wasm.Options
		fuel uint64
		want []string
	}{
		{"a trap", with(counter(), abi.ExportStep, step(Unreachable)), nil, 0, []string{"tickrelay_step at tick 0", "unreachable"}},
		{"a loop that never ends", with(counter(), abi.ExportStep, step(Cat(Forever, I32Const(0)))),
			nil, 100_000, []string{"tickrelay_step at tick 0", "ran out of fuel: its budget is 100000 per call"}},
		{"a loop that never ends, on the default budget", with(counter(), abi.ExportStep, step(Cat(Forever, I32Const(0)))),
			nil, 0, []string{"tickrelay_step at tick 0", fmt.Sprintf("ran out of fuel: its budget is %d per call", sim.DefaultFuel)}},
		{"memory grown past the cap", with(counter(), abi.ExportStep, step(Cat(I32Const(2), MemoryGrow, TrapIfMinusOne, I32Const(0)))),
			&wasm.Options{MemoryLimitPages: 4}, 0, []string{"tickrelay_step at tick 1", "unreachable", "(memory in use: 192 KiB of the 256 KiB cap)"}},
		{"a failure status", with(counter(), abi.ExportStep, step(I32Const(7))), nil, 0, []string{"tickrelay_step at tick 0 returned 7", errText}},
		{"an exit through WASI", func() Module {
			m := with(counter(), abi.ExportStep, step(Cat(I32Const(3), Call(0), I32Const(0))))
			m.Imports = []Import{{Module: abi.WASIModule, Name: "proc_exit", Params: []ValType{I32}}}
			// The import shifts every defined function's index by one; the counter's bodies
			// call none of them.
			return m
		}(), nil, 0, []string{"tickrelay_step at tick 0", "exited with code 3"}},
		{"a buffer it cannot give", with(counter(), abi.ExportBuffer, &Func{Params: []ValType{I32}, Results: []ValType{I32}, Body: I32Const(0)}),
			nil, 0, []string{"tickrelay_buffer(12) returned 0"}},
		{"a buffer outside its memory", with(counter(), abi.ExportBuffer, &Func{Params: []ValType{I32}, Results: []ValType{I32}, Body: I32Const(65530)}),
			nil, 0, []string{"tickrelay_buffer gave [65530, 65530+12)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mod, err := load(t, tt.m, tt.opts)
			require.NoError(t, err)
			s, err := mod.New(sim.Config{Players: 2, Fuel: tt.fuel})
			require.NoError(t, err)
			p := lockstep.NewPeer(s, lockstep.PeerOptions{})
			for tick := uint64(0); tick < 3 && err == nil; tick++ {
				_, _, err = p.Apply(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1)}}})
			}
			require.ErrorIs(t, err, lockstep.ErrSimFailed)
			require.ErrorIs(t, err, wasm.ErrFailed)
			t.Log(err)
			for _, w := range append(tt.want, "test.wasm") {
				assert.Contains(t, err.Error(), w)
			}
			assert.Zero(t, s.Hash(), "a failed sim hashes to 0")
			s.Step(9, nil) // does nothing, never panics
			assert.Equal(t, err.Error()[len(err.Error())-len(s.(sim.Failer).Err().Error()):], s.(sim.Failer).Err().Error())
		})
	}
}

func TestAModuleThatNeverFinishesStartingIsStopped(t *testing.T) {
	m := with(counter(), abi.ExportReactor, &Func{Body: Forever})
	_, err := wasm.LoadBytes("test.wasm", m.Bytes(), nil)
	require.ErrorIs(t, err, wasm.ErrLoad)
	assert.Contains(t, err.Error(), "_initialize: ran out of fuel")
	assert.Contains(t, err.Error(), fmt.Sprintf("budget is %d", meter.InitFuel))
}

func TestADirectoryOfModulesIsRegisteredByTheNamesTheyGiveThemselves(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.wasm"), counter().Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a module"), 0o644))
	mods, err := wasm.RegisterDir(dir, nil)
	require.NoError(t, err)
	require.Len(t, mods, 1)
	s, err := sim.New(counterName, 2, sim.Config{Seed: 3, Players: 1})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), s.Hash())

	t.Run("files claiming one sim that step the same: the smallest is kept", func(t *testing.T) {
		dir := t.TempDir()
		// b.wasm computes the same with a nop more: larger, same hashes.
		bigger := with(counter(), abi.ExportStep, &Func{Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: Cat([]byte{0x01}, stepBody)})
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.wasm"), bigger.Bytes(), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "b.wasm"), counter().Bytes(), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "c.wasm"), counter().Bytes(), 0o644))
		mods, err := wasm.LoadDir(dir, nil)
		require.NoError(t, err)
		require.Len(t, mods, 1)
		assert.Equal(t, "b.wasm", mods[0].File, "the smallest, the first of equals")
		assert.Equal(t, []string{"a.wasm", "c.wasm"}, mods[0].Agreeing)
	})
	t.Run("files claiming one sim that step differently are refused", func(t *testing.T) {
		dir := t.TempDir()
		other := with(counter(), abi.ExportStep, &Func{Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: Cat(
			I32Const(0), I32Const(0), I64Load(0), I64Const(37), I64Mul, I64Store(0), I32Const(0))})
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.wasm"), counter().Bytes(), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "b.wasm"), other.Bytes(), 0o644))
		_, err := wasm.LoadDir(dir, nil)
		require.ErrorIs(t, err, wasm.ErrLoad)
		assert.Contains(t, err.Error(), "a.wasm and b.wasm both say they are counter version 2, and they differ: seed 1, 2 players: after tick 0 the hash is")
	})
	t.Run("a missing directory is an error", func(t *testing.T) {
		_, err := wasm.LoadDir(filepath.Join(dir, "nope"), nil)
		assert.ErrorIs(t, err, wasm.ErrLoad)
	})
}

func TestAModulesOwnCommandsAreAskedForOnceWhenItLoads(t *testing.T) {
	sample := func(n uint32) *Func {
		return &Func{Params: []ValType{I64, I32}, Results: []ValType{I64}, Body: I64Const(Span(16, n))}
	}
	m, err := wasm.LoadBytes("test.wasm", with(counter(), abi.ExportSample, sample(3)).Bytes(), nil)
	require.NoError(t, err)
	defer m.Close()
	require.Len(t, m.Payloads, wasm.SampleCount)
	assert.Equal(t, []byte(counterName[:3]), m.Payloads[0])

	_, err = wasm.LoadBytes("test.wasm", with(counter(), abi.ExportSample, sample(simtest.MaxSampleBytes+1)).Bytes(), nil)
	require.ErrorIs(t, err, wasm.ErrLoad)
	assert.Contains(t, err.Error(), "tickrelay_sample(0, 1) returned 4097 bytes; a sample command has at most 4096")

	wrong := &Func{Params: []ValType{I32}, Results: []ValType{I64}, Body: I64Const(0)}
	_, err = wasm.LoadBytes("test.wasm", with(counter(), abi.ExportSample, wrong).Bytes(), nil)
	require.ErrorIs(t, err, wasm.ErrLoad)
	assert.Contains(t, err.Error(), "tickrelay_sample")
}
