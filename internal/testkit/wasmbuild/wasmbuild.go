package wasmbuild

import (
	"encoding/binary"

	"github.com/tickrelay/tickrelay/internal/lib/leb128"
)

// ValType is a WebAssembly value type.
type ValType byte

// The value types the tests need.
const (
	I32 ValType = 0x7f
	I64 ValType = 0x7e
)

// Func is a function defined by the module. Body holds its instructions without the
// final end; Export, if not empty, exports it under that name.
type Func struct {
	Export          string
	Params, Results []ValType
	Locals          []ValType
	Body            []byte
	// Raw, if not nil, is the whole body as encoded: its locals, its instructions and
	// its end (Locals and Body are ignored).
	Raw []byte
}

// Import is an imported function.
type Import struct {
	Module, Name    string
	Params, Results []ValType
}

// Data is an active data segment at Offset in memory 0.
type Data struct {
	Offset uint32
	Bytes  []byte
}

// Module is a whole module. Function indices count the imports first, then Funcs.
type Module struct {
	Imports []Import
	Funcs   []Func
	// MemoryPages is the memory's minimum size in 64 KiB pages; MaxPages, if not zero,
	// its maximum. NoMemory leaves the memory out; MemoryExport names its export
	// (default "memory").
	MemoryPages, MaxPages uint32
	NoMemory              bool
	MemoryExport          string
	Data                  []Data
}

// Bytes encodes the module.
func (m Module) Bytes() []byte {
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	var types, imports, funcs, exports, code, data []byte
	nTypes := 0
	for _, im := range m.Imports {
		types = append(types, funcType(im.Params, im.Results)...)
		imports = append(imports, name(im.Module)...)
		imports = append(imports, name(im.Name)...)
		imports = append(imports, 0x00)
		imports = U32(imports, uint32(nTypes))
		nTypes++
	}
	nExports := 0
	for i, f := range m.Funcs {
		types = append(types, funcType(f.Params, f.Results)...)
		funcs = U32(funcs, uint32(nTypes))
		nTypes++
		if f.Export != "" {
			exports = append(exports, name(f.Export)...)
			exports = append(exports, 0x00)
			exports = U32(exports, uint32(len(m.Imports)+i))
			nExports++
		}
		var body []byte
		body = U32(body, uint32(len(f.Locals)))
		for _, l := range f.Locals {
			body = append(body, 1, byte(l))
		}
		body = append(body, f.Body...)
		body = append(body, 0x0b)
		if f.Raw != nil {
			body = f.Raw
		}
		code = U32(code, uint32(len(body)))
		code = append(code, body...)
	}
	if !m.NoMemory {
		exp := m.MemoryExport
		if exp == "" {
			exp = "memory"
		}
		exports = append(exports, name(exp)...)
		exports = append(exports, 0x02, 0x00)
		nExports++
	}
	for _, d := range m.Data {
		data = append(data, 0x00, 0x41)
		data = S64(data, int64(int32(d.Offset)))
		data = append(data, 0x0b)
		data = U32(data, uint32(len(d.Bytes)))
		data = append(data, d.Bytes...)
	}
	out = section(out, 1, nTypes, types)
	out = section(out, 2, len(m.Imports), imports)
	out = section(out, 3, len(m.Funcs), funcs)
	if !m.NoMemory {
		var mem []byte
		if m.MaxPages > 0 {
			mem = append(mem, 0x01)
			mem = U32(mem, m.MemoryPages)
			mem = U32(mem, m.MaxPages)
		} else {
			mem = append(mem, 0x00)
			mem = U32(mem, m.MemoryPages)
		}
		out = section(out, 5, 1, mem)
	}
	out = section(out, 7, nExports, exports)
	out = section(out, 10, len(m.Funcs), code)
	out = section(out, 11, len(m.Data), data)
	return out
}

func funcType(params, results []ValType) []byte {
	b := []byte{0x60}
	b = U32(b, uint32(len(params)))
	for _, p := range params {
		b = append(b, byte(p))
	}
	b = U32(b, uint32(len(results)))
	for _, r := range results {
		b = append(b, byte(r))
	}
	return b
}

func name(s string) []byte { return append(U32(nil, uint32(len(s))), s...) }

func section(out []byte, id byte, n int, body []byte) []byte {
	if n == 0 {
		return out
	}
	content := U32(nil, uint32(n))
	content = append(content, body...)
	out = append(out, id)
	out = U32(out, uint32(len(content)))
	return append(out, content...)
}

// U32 appends v as unsigned LEB128 (the meter's own encoder: internal/lib/leb128).
func U32(b []byte, v uint32) []byte { return leb128.AppendU32(b, v) }

// S64 appends v as signed LEB128.
func S64(b []byte, v int64) []byte { return leb128.AppendS64(b, v) }

// Instructions, each returning its encoding; concatenate them into a Body.

// I32Const pushes v.
func I32Const(v int32) []byte { return S64([]byte{0x41}, int64(v)) }

// I64Const pushes v.
func I64Const(v int64) []byte { return S64([]byte{0x42}, v) }

// LocalGet pushes local i.
func LocalGet(i uint32) []byte { return U32([]byte{0x20}, i) }

// Call calls function i.
func Call(i uint32) []byte { return U32([]byte{0x10}, i) }

// I64Load loads 8 bytes at the address on the stack plus offset.
func I64Load(offset uint32) []byte { return U32([]byte{0x29, 0x03}, offset) }

// I64Store stores 8 bytes (address, value on the stack) at the address plus offset.
func I64Store(offset uint32) []byte { return U32([]byte{0x37, 0x03}, offset) }

// Single-byte instructions.
var (
	Unreachable = []byte{0x00}
	Drop        = []byte{0x1a}
	I64Add      = []byte{0x7c}
	I64Mul      = []byte{0x7e}
	I64ExtendU  = []byte{0xad} // i64.extend_i32_u
	I32Eq       = []byte{0x46}
	MemoryGrow  = []byte{0x40, 0x00}
	// Forever is a loop that never ends: loop br 0 end.
	Forever = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}
	// TrapIfMinusOne traps if the i32 on the stack is -1 (the result of a refused
	// memory.grow) and drops it otherwise: i32.const -1, i32.eq, if unreachable end.
	TrapIfMinusOne = []byte{0x41, 0x7f, 0x46, 0x04, 0x40, 0x00, 0x0b}
)

// Cat concatenates instructions.
func Cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// Span packs a pointer and a length as the ABI's i64 span.
func Span(ptr, n uint32) int64 { return int64(uint64(ptr) | uint64(n)<<32) }

// LE64 is v as 8 little-endian bytes.
func LE64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
