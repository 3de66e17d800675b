//go:build wasip1

package guest

import (
	"bytes"
	"unsafe"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// The module's state: its one sim, the input buffer the host writes into, the bytes of
// the last span returned (kept alive until the next call) and the last error message.
var (
	current sim.Sim
	input   []byte
	out     []byte
	errMsg  []byte
	cmds    []sim.Command
)

func span(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return abi.Span(uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b)))
}

func fail(msg string) int32 {
	errMsg = []byte(msg)
	return 1
}

func failSpan(msg string) uint64 {
	errMsg = []byte(msg)
	return abi.Failed
}

//go:wasmexport tickrelay_abi_version
func abiVersion() int32 { return abi.Version }

//go:wasmexport tickrelay_sim_name
func name() uint64 { return span(simName) }

//go:wasmexport tickrelay_sim_version
func version() int32 { return int32(simVersion) }

//go:wasmexport tickrelay_buffer
func buffer(size int32) int32 {
	if size <= 0 {
		size = 1
	}
	if int(size) > len(input) {
		input = make([]byte, size)
	}
	return int32(uintptr(unsafe.Pointer(&input[0])))
}

// in returns the first n bytes of the input buffer; ok is false when n is out of range.
func in(n int32) (b []byte, ok bool) {
	if n < 0 || int(n) > len(input) {
		return nil, false
	}
	return input[:n], true
}

//go:wasmexport tickrelay_init
func initSim(seed uint64, players int32, paramsLen int32) int32 {
	if current != nil {
		return fail("tickrelay_init was called twice")
	}
	params, ok := in(paramsLen)
	if !ok {
		return fail("the params are larger than the input buffer")
	}
	s, err := sim.New(string(simName), simVersion, sim.Config{Seed: seed, Players: int(players), Params: bytes.Clone(params)})
	if err != nil {
		return fail(err.Error())
	}
	current = s
	return 0
}

//go:wasmexport tickrelay_step
func step(tick uint64, count int32, size int32) int32 {
	b, ok := in(size)
	if current == nil || !ok || count < 0 {
		return fail("tickrelay_step needs tickrelay_init first and a size within the input buffer")
	}
	var err error
	cmds, err = abi.AppendCommands(cmds[:0], b, uint32(count))
	if err != nil {
		return fail(err.Error())
	}
	current.Step(tick, cmds)
	return 0
}

//go:wasmexport tickrelay_hash
func hash() uint64 {
	if current == nil {
		return 0
	}
	return current.Hash()
}

//go:wasmexport tickrelay_error
func lastError() uint64 { return span(errMsg) }

//go:wasmexport tickrelay_snapshot
func snapshot() uint64 {
	s, ok := current.(sim.Snapshotter)
	if !ok {
		return failSpan("not supported: the sim has no snapshots")
	}
	out = s.Snapshot()
	return span(out)
}

//go:wasmexport tickrelay_restore
func restore(size int32) int32 {
	s, ok := current.(sim.Snapshotter)
	if !ok {
		return fail("not supported: the sim has no snapshots")
	}
	b, ok := in(size)
	if !ok {
		return fail("the snapshot is larger than the input buffer")
	}
	if err := s.Restore(bytes.Clone(b)); err != nil {
		return fail(err.Error())
	}
	return 0
}

//go:wasmexport tickrelay_outcome
func outcome() uint64 {
	if e, ok := current.(sim.Ender); ok {
		if over, winner := e.Outcome(); over {
			return uint64(winner)
		}
	}
	return abi.NotOver
}

//go:wasmexport tickrelay_subhashes
func subHashes() uint64 {
	s, ok := current.(sim.SubHasher)
	if !ok {
		return failSpan("not supported: the sim has no sub-hashes")
	}
	out = abi.AppendSubHashes(out[:0], s.SubHashes())
	return span(out)
}

//go:wasmexport tickrelay_dump
func dump() uint64 {
	d, ok := current.(sim.Dumper)
	if !ok {
		return failSpan("not supported: the sim has no dump")
	}
	var b bytes.Buffer
	if err := d.Dump(&b); err != nil {
		return failSpan(err.Error())
	}
	out = b.Bytes()
	return span(out)
}
