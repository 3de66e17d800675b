package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxTableElements bounds every table of a module (its declared maximum): a table's
// elements are host memory outside MemoryLimitPages (8 bytes each), so a table that may
// grow without bound (table.grow) would let a module take the host's memory. 65,536
// elements (512 KiB) is far more than a sim's indirect calls need; Go's and
// AssemblyScript's modules declare a few thousand at most.
const MaxTableElements = 1 << 16

// capTables returns the module's bytes with every table given a maximum of at most
// MaxTableElements: a table that declares none gets that one (Go's modules declare none
// and never grow their table), one that declares more, or starts with more, is refused,
// as is a table import. Bytes it cannot read come back as they are, for the runtime's
// compiler to refuse with its own message.
func capTables(b []byte) ([]byte, error) {
	r := &leb{b: b, at: 8} // after the magic and version
	for r.at < len(r.b) && r.err == nil {
		at := r.at
		id := r.byte()
		size := r.u32()
		end := r.at + int(size)
		if r.err != nil || end > len(r.b) || end < r.at {
			return b, nil
		}
		switch id {
		case 2: // imports: module name, field name, kind, type
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.skip(int(r.u32()))
				r.skip(int(r.u32()))
				switch r.byte() {
				case 0x00: // a function: its type index
					r.u32()
				case 0x01:
					return nil, errors.New("it imports a table; a sim module may import only WASI functions (docs/wasm-sims.md)")
				case 0x02: // a memory (which checkImports refuses)
					r.limits()
				case 0x03: // a global: value type, mutability
					r.skip(2)
				default:
					return b, nil
				}
			}
		case 4: // tables: reference type, limits
			var sec []byte
			n := r.u32()
			sec = binary.AppendUvarint(sec, uint64(n))
			for i := uint32(0); i < n && r.err == nil; i++ {
				ref := r.byte()
				lo, hi, hasMax := r.limits()
				switch {
				case r.err != nil:
					return b, nil
				case hasMax && hi > MaxTableElements, lo > MaxTableElements:
					return nil, fmt.Errorf("its table %d has up to %d elements; at most %d (the host's memory cap does not cover tables)", i, max(lo, hi), MaxTableElements)
				case !hasMax:
					hi = MaxTableElements
				}
				sec = append(sec, ref, 0x01)
				sec = binary.AppendUvarint(sec, uint64(lo))
				sec = binary.AppendUvarint(sec, uint64(hi))
			}
			if r.err != nil || r.at != end {
				return b, nil
			}
			out := append([]byte(nil), b[:at]...)
			out = append(out, 4)
			out = binary.AppendUvarint(out, uint64(len(sec)))
			out = append(out, sec...)
			return append(out, b[end:]...), nil
		}
		r.at = end
	}
	return b, nil
}

var errBadBinary = errors.New("a WebAssembly binary this host cannot read")

// leb reads a WebAssembly binary: bytes and unsigned LEB128 numbers. A read past the end
// sets err.
type leb struct {
	b   []byte
	at  int
	err error
}

func (r *leb) byte() byte {
	if r.at >= len(r.b) {
		r.err = errBadBinary
		return 0
	}
	r.at++
	return r.b[r.at-1]
}

func (r *leb) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.err = errBadBinary
	return 0
}

func (r *leb) skip(n int) {
	if n < 0 || n > len(r.b)-r.at {
		r.err = errBadBinary
		return
	}
	r.at += n
}

// limits reads a limits field: a minimum and, flag 1, a maximum.
func (r *leb) limits() (lo, hi uint32, hasMax bool) {
	switch r.byte() {
	case 0x00:
		return r.u32(), 0, false
	case 0x01:
		lo = r.u32()
		return lo, r.u32(), true
	}
	r.err = errBadBinary
	return 0, 0, false
}
