package wasm_test

import (
	"errors"
	"io"
	"testing"

	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// returns are the values a fuzzed module's exports return, and the bytes its memory
// starts with.
type returns struct {
	abiVersion, version, buffer, step, restore int32
	name, hash, outcome, sub, dump, snap       uint64
	data                                       []byte
}

// returning builds a module whose every export returns a constant from r.
func returning(r returns) Module {
	c32 := func(v int32, params ...ValType) Func {
		return Func{Params: params, Results: []ValType{I32}, Body: I32Const(v)}
	}
	c64 := func(v uint64) Func { return Func{Results: []ValType{I64}, Body: I64Const(int64(v))} }
	fs := []struct {
		name string
		f    Func
	}{
		{abi.ExportABI, c32(r.abiVersion)},
		{abi.ExportName, c64(r.name)},
		{abi.ExportVersion, c32(r.version)},
		{abi.ExportBuffer, c32(r.buffer, I32)},
		{abi.ExportInit, c32(0, I64, I32, I32)},
		{abi.ExportStep, c32(r.step, I64, I32, I32)},
		{abi.ExportHash, c64(r.hash)},
		{abi.ExportError, c64(r.name)},
		{abi.ExportOutcome, c64(r.outcome)},
		{abi.ExportSubHashes, c64(r.sub)},
		{abi.ExportDump, c64(r.dump)},
		{abi.ExportSnapshot, c64(r.snap)},
		{abi.ExportRestore, c32(r.restore, I32)},
	}
	m := Module{MemoryPages: 1, Data: []Data{{Offset: 0, Bytes: r.data}}}
	for _, f := range fs {
		f.f.Export = f.name
		m.Funcs = append(m.Funcs, f.f)
	}
	return m
}

// FuzzModuleReturns feeds the host every value a module can return through the ABI —
// spans in and out of memory, statuses, outcomes, sub-hash bytes, a buffer anywhere — and
// requires errors that wrap the package's sentinels, never a panic.
func FuzzModuleReturns(f *testing.F) {
	name := []byte("fuzzed")
	sub := abi.AppendSubHashes(nil, []sim.NamedHash{{Name: "a", Hash: 1}})
	data := append(append([]byte{}, name...), sub...)
	good := Span(0, uint32(len(name)))
	f.Add(int32(1), int32(1), int32(1024), int32(0), int32(0), uint64(good), uint64(42), abi.NotOver, uint64(Span(uint32(len(name)), uint32(len(sub)))), uint64(good), uint64(good), data)
	f.Add(int32(1), int32(3), int32(65535), int32(1), int32(1), uint64(good), uint64(0), uint64(2), abi.Failed, abi.Failed, uint64(Span(65535, 2)), data)
	f.Add(int32(2), int32(0), int32(0), int32(0), int32(0), uint64(0), uint64(0), uint64(1<<40), uint64(0), uint64(0), uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, abiVersion, version, buffer, step, restore int32, nameSpan, hash, outcome, subSpan, dumpSpan, snapSpan uint64, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		r := returns{abiVersion, version, buffer, step, restore, nameSpan, hash, outcome, subSpan, dumpSpan, snapSpan, data}
		mod, err := wasm.LoadBytes("fuzz.wasm", returning(r).Bytes(), nil)
		if err != nil {
			if !errors.Is(err, wasm.ErrLoad) {
				t.Fatalf("a load error that is not ErrLoad: %v", err)
			}
			return
		}
		defer mod.Close()
		s, err := mod.New(sim.Config{Seed: 1, Players: 2, Params: data})
		if err != nil {
			if !errors.Is(err, wasm.ErrFailed) && !errors.Is(err, sim.ErrBadConfig) {
				t.Fatalf("a build error that is neither ErrFailed nor ErrBadConfig: %v", err)
			}
			return
		}
		for tick := uint64(0); tick < 3; tick++ {
			s.Step(tick, []sim.Command{{Player: 1, Seq: uint32(tick), Payload: data}})
		}
		_ = s.Hash()
		_, _ = s.(sim.Ender).Outcome()
		_ = s.(sim.SubHasher).SubHashes()
		_ = s.(sim.Dumper).Dump(io.Discard)
		if snap, ok := s.(sim.Snapshotter); ok {
			_ = snap.Restore(snap.Snapshot())
		}
		if err := s.(sim.Failer).Err(); err != nil && !errors.Is(err, wasm.ErrFailed) {
			t.Fatalf("a run-time error that is not ErrFailed: %v", err)
		}
	})
}
