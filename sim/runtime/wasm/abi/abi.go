package abi

import (
	"encoding/binary"
	"fmt"

	"github.com/tickrelay/tickrelay/sim"
)

// Version is the ABI version this package describes; a module's tickrelay_abi_version
// returns it.
const Version = 1

// The exports of ABI version 1 (docs/wasm-sims.md has their signatures).
const (
	ExportMemory    = "memory"
	ExportABI       = "tickrelay_abi_version"
	ExportName      = "tickrelay_sim_name"
	ExportVersion   = "tickrelay_sim_version"
	ExportBuffer    = "tickrelay_buffer"
	ExportInit      = "tickrelay_init"
	ExportStep      = "tickrelay_step"
	ExportHash      = "tickrelay_hash"
	ExportError     = "tickrelay_error"
	ExportSnapshot  = "tickrelay_snapshot"
	ExportRestore   = "tickrelay_restore"
	ExportOutcome   = "tickrelay_outcome"
	ExportSubHashes = "tickrelay_subhashes"
	ExportDump      = "tickrelay_dump"
	// ExportSample makes the sim's own commands: (seed i64, player i32) -> span of one
	// valid payload, for the checks and for players without a script of the sim.
	ExportSample = "tickrelay_sample"
	// ExportReactor is the WASI reactor's start-up function, called once if present.
	ExportReactor = "_initialize"
	// ExportFuel is the fuel counter the host's metering adds to a module (package
	// sim/runtime/wasm/meter): a mutable i64 global the host sets to a call's budget. A module as
	// built must not export it.
	ExportFuel = "tickrelay_fuel"
	// WASIModule is the one import module a sim module may use.
	WASIModule = "wasi_snapshot_preview1"
)

// Failed is the span an export returns instead of a result when it fails; NotOver is
// what tickrelay_outcome returns while the match goes on.
const (
	Failed  = ^uint64(0)
	NotOver = ^uint64(0)
)

// CommandHeader is the size of a command's header in the tick layout: player, seq and
// payload length, u32 little-endian each.
const CommandHeader = 12

// Span packs a pointer and a length into memory as an i64: ptr | n<<32.
func Span(ptr, n uint32) uint64 { return uint64(ptr) | uint64(n)<<32 }

// SplitSpan unpacks a span.
func SplitSpan(v uint64) (ptr, n uint32) { return uint32(v), uint32(v >> 32) }

// CheckSpan unpacks v and checks that it lies inside a memory of size bytes.
func CheckSpan(v uint64, size uint32) (ptr, n uint32, err error) {
	ptr, n = SplitSpan(v)
	if uint64(ptr)+uint64(n) > uint64(size) {
		return 0, 0, fmt.Errorf("%w: the span [%d, %d+%d) lies outside a memory of %d bytes", ErrMalformed, ptr, ptr, n, size)
	}
	return ptr, n, nil
}

// CommandsSize is the size of cmds in the tick layout.
func CommandsSize(cmds []sim.Command) int {
	n := 0
	for i := range cmds {
		n += CommandHeader + len(cmds[i].Payload)
	}
	return n
}

// PutCommands writes cmds into dst, which holds at least CommandsSize(cmds) bytes, in
// the tick layout: per command its player, seq, payload length and payload, back to back.
func PutCommands(dst []byte, cmds []sim.Command) {
	off := 0
	for i := range cmds {
		binary.LittleEndian.PutUint32(dst[off:], cmds[i].Player)
		binary.LittleEndian.PutUint32(dst[off+4:], cmds[i].Seq)
		binary.LittleEndian.PutUint32(dst[off+8:], uint32(len(cmds[i].Payload)))
		off += CommandHeader + copy(dst[off+CommandHeader:], cmds[i].Payload)
	}
}

// AppendCommands decodes count commands in the tick layout from b, appending them to
// dst. Payloads alias b. It returns an error, never panics, if b does not hold exactly
// count commands.
func AppendCommands(dst []sim.Command, b []byte, count uint32) ([]sim.Command, error) {
	for i := range count {
		if len(b) < CommandHeader {
			return dst, fmt.Errorf("%w: command %d of %d is cut in its header", ErrMalformed, i, count)
		}
		n := binary.LittleEndian.Uint32(b[8:])
		if uint64(n) > uint64(len(b)-CommandHeader) {
			return dst, fmt.Errorf("%w: command %d claims a %d-byte payload, %d bytes are left", ErrMalformed, i, n, len(b)-CommandHeader)
		}
		dst = append(dst, sim.Command{
			Player:  binary.LittleEndian.Uint32(b),
			Seq:     binary.LittleEndian.Uint32(b[4:]),
			Payload: b[CommandHeader : CommandHeader+n : CommandHeader+n],
		})
		b = b[CommandHeader+n:]
	}
	if len(b) != 0 {
		return dst, fmt.Errorf("%w: %d bytes follow the last of %d commands", ErrMalformed, len(b), count)
	}
	return dst, nil
}

// AppendSubHashes encodes named hashes as tickrelay_subhashes returns them: a count
// (u32), then per entry the name length (u32), the name and the hash (u64).
func AppendSubHashes(b []byte, hs []sim.NamedHash) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hs)))
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Name)))
		b = append(b, h.Name...)
		b = binary.LittleEndian.AppendUint64(b, h.Hash)
	}
	return b
}

// ParseSubHashes decodes what AppendSubHashes encodes. It returns an error, never
// panics, on any bytes, and never allocates more than the bytes can hold.
func ParseSubHashes(b []byte) ([]sim.NamedHash, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: sub-hashes need a 4-byte count, got %d bytes", ErrMalformed, len(b))
	}
	count := binary.LittleEndian.Uint32(b)
	b = b[4:]
	// Every entry takes at least 12 bytes.
	if uint64(count)*12 > uint64(len(b)) {
		return nil, fmt.Errorf("%w: sub-hashes claim %d entries in %d bytes", ErrMalformed, count, len(b))
	}
	out := make([]sim.NamedHash, 0, count)
	for i := range count {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: sub-hash %d is cut before its name length", ErrMalformed, i)
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(n)+8 > uint64(len(b)) {
			return nil, fmt.Errorf("%w: sub-hash %d: a %d-byte name and its hash do not fit in the %d bytes left", ErrMalformed, i, n, len(b))
		}
		out = append(out, sim.NamedHash{Name: string(b[:n]), Hash: binary.LittleEndian.Uint64(b[n:])})
		b = b[n+8:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes follow the last sub-hash", ErrMalformed, len(b))
	}
	return out, nil
}
