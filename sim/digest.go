package sim

// FNV-1a 64 parameters.
const (
	fnvOffset64 = 0xcbf29ce484222325
	fnvPrime64  = 0x100000001b3
)

// Digest is an FNV-1a 64 hash that state writes into as little-endian bytes, so the same
// values give the same digest on every platform. The zero value is not ready: start with
// NewDigest. Digest never allocates.
type Digest struct{ h uint64 }

// NewDigest returns a Digest at the FNV-1a 64 offset basis.
func NewDigest() Digest { return Digest{h: fnvOffset64} }

// Byte mixes one byte.
func (d *Digest) Byte(b byte) {
	d.h ^= uint64(b)
	d.h *= fnvPrime64
}

// Bytes mixes bytes in order. It does not mix the length: write it first with U32 where
// the boundary matters.
func (d *Digest) Bytes(p []byte) {
	for _, b := range p {
		d.Byte(b)
	}
}

// U64 mixes v as 8 little-endian bytes.
func (d *Digest) U64(v uint64) {
	for i := 0; i < 8; i++ {
		d.Byte(byte(v >> (8 * i)))
	}
}

// U32 mixes v as 4 little-endian bytes.
func (d *Digest) U32(v uint32) {
	for i := 0; i < 4; i++ {
		d.Byte(byte(v >> (8 * i)))
	}
}

// I64 mixes v as 8 little-endian two's-complement bytes.
func (d *Digest) I64(v int64) { d.U64(uint64(v)) }

// Bool mixes one byte, 1 or 0.
func (d *Digest) Bool(v bool) {
	if v {
		d.Byte(1)
	} else {
		d.Byte(0)
	}
}

// Sum returns the digest so far.
func (d *Digest) Sum() uint64 { return d.h }
