package wasm_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"

	. "github.com/tickrelay/tickrelay/internal/testkit/wasmbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// withTable inserts a table section (one funcref table with the limits given, as
// encoded) into a module's bytes, before the memory section.
func withTable(b []byte, limits ...byte) []byte {
	out := append([]byte(nil), b[:8]...)
	i := 8
	inserted := false
	for i < len(b) {
		id := b[i]
		// section size LEB
		size, n := uint32(0), 0
		for shift := 0; ; shift += 7 {
			c := b[i+1+n]
			size |= uint32(c&0x7f) << shift
			n++
			if c < 0x80 {
				break
			}
		}
		end := i + 1 + n + int(size)
		if !inserted && id > 3 && id != 0 {
			sec := append([]byte{1, 0x70}, limits...) // 1 table: funcref, its limits
			out = append(out, 4, byte(len(sec)))
			out = append(out, sec...)
			inserted = true
		}
		out = append(out, b[i:end]...)
		i = end
	}
	return out
}

// A module's tables are host memory outside MemoryLimitPages: a table with no maximum
// gets MaxTableElements, so a table.grow past it fails, as WebAssembly says, instead of
// making the host allocate 8 bytes per element (2^32-2 elements: 32 GiB, which the Go
// runtime cannot recover from; two steps of this test took 880 MiB before). A table that
// declares more, or imports one, is refused at load.
func TestATableCannotGrowPastTheHostsCap(t *testing.T) {
	const delta = 1 << 25 // 32 Mi elements = 256 MiB on the host
	step := Cat(
		[]byte{0xd0, 0x70}, // ref.null func
		I32Const(delta),
		[]byte{0xfc, 0x0f, 0x00}, // table.grow 0
		Drop,
		I32Const(0),
	)
	m := with(counter(), abi.ExportStep, &Func{Params: []ValType{I64, I32, I32}, Results: []ValType{I32}, Body: step})
	_, err := wasm.LoadBytes("big.wasm", withTable(m.Bytes(), 0x01, 0x00, 0x80, 0x80, 0x80, 0x01), nil) // max 2^21
	require.ErrorIs(t, err, wasm.ErrLoad)
	assert.Contains(t, err.Error(), "its table 0 has up to 2097152 elements; at most 65536")
	mod, err := wasm.LoadBytes("table.wasm", withTable(m.Bytes(), 0x00, 0x00), &wasm.Options{MemoryLimitPages: 1}) // no max
	require.NoError(t, err)
	defer mod.Close()
	s, err := mod.New(sim.Config{Seed: 1, Players: 2})
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := lockstep.NewPeer(s, lockstep.PeerOptions{})
	for tick := range uint64(2) {
		_, _, err := p.Apply(lockstep.Frame{Tick: tick})
		require.NoError(t, err)
	}
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew by %d MiB with a memory cap of 64 KiB", grew>>20)
	assert.Less(t, grew, int64(64<<20), "an instance capped at 64 KiB of memory made the host allocate %d MiB", grew>>20)
}

// A failing tickrelay_hash (a trap, or out of fuel) is a failed sim (verify's
// exit 2), not a divergence (exit 1, as it was).
func TestAModuleWhoseHashFailsIsUnusableNotADivergence(t *testing.T) {
	m := counter()
	m.Data[0].Bytes = []byte("zzbadhash")
	m = with(m, abi.ExportName, &Func{Results: []ValType{I64}, Body: I64Const(Span(16, 9))})
	m = with(m, abi.ExportHash, &Func{Results: []ValType{I64}, Body: Unreachable})
	mod, err := wasm.LoadBytes("badhash.wasm", m.Bytes(), nil)
	require.NoError(t, err)
	defer mod.Close()
	require.NoError(t, sim.Provide(mod.Name, mod.Version, mod.New))
	start := &pb.Start{SimName: mod.Name, SimVersion: mod.Version, Seed: 1, ChecksumEvery: 10,
		Players: []*pb.Player{{Id: 1}, {Id: 2}}}
	start.ConfigHash = replay.ConfigHash(start)
	rp := &replay.Replay{Start: start, Ticks: 20, Checkpoints: []*pb.Checkpoint{{Tick: 9, Hash: 1234}}}
	_, err = replay.Verify(rp, replay.VerifyOptions{})
	require.Error(t, err)
	var div *replay.DivergenceError
	assert.False(t, errors.As(err, &div), "a module whose hash traps is reported as a divergence: %v", err)
	assert.ErrorIs(t, err, wasm.ErrFailed)
}

// A --sim-dir whose path holds a glob metacharacter is a path, not a pattern. (It loaded
// nothing, silently.)
func TestLoadDirTakesItsPathLiterally(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sims[1]")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "counter.wasm"), counter().Bytes(), 0o644))
	mods, err := wasm.LoadDir(dir, nil)
	for _, m := range mods {
		defer m.Close()
	}
	require.NoError(t, err)
	assert.Len(t, mods, 1, "the directory holds one module")
}

// --sim-dir naming a file, not a directory, is an error. (It loaded nothing and said
// nothing: the tools then used the built-in sim of that name.)
func TestLoadDirGivenAFileSaysSo(t *testing.T) {
	f := filepath.Join(t.TempDir(), "counter.wasm")
	require.NoError(t, os.WriteFile(f, counter().Bytes(), 0o644))
	mods, err := wasm.LoadDir(f, nil)
	assert.Error(t, err, "a file is not a directory of modules; loaded %d modules", len(mods))
}

// Two versions of one sim side by side in a directory load, and a replay of either runs.
// (NewSimFor required the recorded version to be the latest registered.)
func TestAReplayOfAnyRegisteredVersionRuns(t *testing.T) {
	dir := t.TempDir()
	v1 := with(counter(), abi.ExportVersion, &Func{Results: []ValType{I32}, Body: I32Const(1)})
	v1.Data[0].Bytes = []byte("zzvers\x00")
	v1 = with(v1, abi.ExportName, &Func{Results: []ValType{I64}, Body: I64Const(Span(16, 6))})
	v2 := with(v1, abi.ExportVersion, &Func{Results: []ValType{I32}, Body: I32Const(2)})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a-v1.wasm"), v1.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b-v2.wasm"), v2.Bytes(), 0o644))
	mods, err := wasm.RegisterDir(dir, nil)
	require.NoError(t, err)
	require.Len(t, mods, 2)
	start := &pb.Start{SimName: "zzvers", SimVersion: 1, Seed: 1, Players: []*pb.Player{{Id: 1}}}
	start.ConfigHash = replay.ConfigHash(start)
	_, err = sim.New("zzvers", 1, replay.SimConfig(start))
	require.NoError(t, err, "the registry has version 1")
	_, err = replay.NewSimFor(start)
	assert.NoError(t, err, "a replay of a registered version")
}
