package meter

import (
	"errors"

	"github.com/tickrelay/tickrelay/internal/lib/leb128"
)

// errShort is a read past the end of what is being read (a section, a function body).
var errShort = errors.New("it ends in the middle of a value")

// reader reads a WebAssembly binary: bytes and LEB128 numbers. The first failed read sets
// err; later reads return zero.
type reader struct {
	b   []byte
	at  int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.at >= len(r.b) {
		r.fail(errShort)
		return 0
	}
	r.at++
	return r.b[r.at-1]
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *reader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if v > 1<<32-1 {
				r.fail(errors.New("a number is larger than 32 bits"))
				return 0
			}
			return uint32(v)
		}
	}
	r.fail(errors.New("a number runs past 5 bytes"))
	return 0
}

// sleb skips a signed LEB128 number of at most n bits.
func (r *reader) sleb(bits int) {
	for i := 0; i < (bits+6)/7; i++ {
		if r.byte() < 0x80 {
			return
		}
	}
	r.fail(errors.New("a signed number runs past its size"))
}

func (r *reader) skip(n int) {
	if r.err == nil && (n < 0 || n > len(r.b)-r.at) {
		r.fail(errShort)
		return
	}
	r.at += n
}

// name skips a name: a length and that many bytes. It returns the name.
func (r *reader) name() string {
	n := int(r.u32())
	at := r.at
	r.skip(n)
	if r.err != nil {
		return ""
	}
	return string(r.b[at:r.at])
}

// constant skips the immediate of a numeric constant instruction op (i32, i64, f32 or
// f64.const), in function bodies and constant expressions alike.
func (r *reader) constant(op byte) {
	switch op {
	case opI32Const:
		r.sleb(32)
	case opI64Const:
		r.sleb(64)
	case opF32Const:
		r.skip(4)
	case opF64Const:
		r.skip(8)
	}
}

// limits reads a limits field: a minimum and, flag 1, a maximum.
func (r *reader) limits() (lo, hi uint32, hasMax bool) {
	switch r.byte() {
	case 0x00:
		return r.u32(), 0, false
	case 0x01:
		lo = r.u32()
		return lo, r.u32(), true
	}
	r.fail(errors.New("a limits field has a flag other than 0 or 1"))
	return 0, 0, false
}

func u32(b []byte, v uint32) []byte { return leb128.AppendU32(b, v) }

func s64(b []byte, v int64) []byte { return leb128.AppendS64(b, v) }
