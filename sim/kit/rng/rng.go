package rng

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/tickrelay/tickrelay/sim"
)

// ErrBadState means a state given to SetState cannot be a PCG32 state.
var ErrBadState = errors.New("rng: bad state")

// multiplier is the 64-bit LCG multiplier of PCG32.
const multiplier = 6364136223846793005

// Rand is a PCG32 generator. Build it with New or NewStream; the zero value is not
// seeded (its stream increment is even) and must not be used. Rand is a value: copy it
// to fork the sequence.
type Rand struct {
	state uint64
	inc   uint64 // always odd
}

// New returns a generator seeded with seed on stream 0: NewStream(seed, 0).
func New(seed uint64) Rand { return NewStream(seed, 0) }

// NewStream returns a generator seeded as the reference pcg32_srandom_r(seed, stream)
// does. Different streams give unrelated sequences for the same seed.
func NewStream(seed, stream uint64) Rand {
	r := Rand{inc: stream<<1 | 1}
	r.step()
	r.state += seed
	r.step()
	return r
}

func (r *Rand) step() { r.state = r.state*multiplier + r.inc }

// Uint32 returns the next 32-bit output (pcg32_random_r).
func (r *Rand) Uint32() uint32 {
	old := r.state
	r.step()
	xorshifted := uint32(((old >> 18) ^ old) >> 27)
	return bits.RotateLeft32(xorshifted, -int(old>>59))
}

// Uint64 returns two outputs as one number, the first as the high 32 bits.
func (r *Rand) Uint64() uint64 {
	hi := uint64(r.Uint32())
	return hi<<32 | uint64(r.Uint32())
}

// Uint32n returns a uniform number in [0, n), as the reference pcg32_boundedrand_r does.
// Uint32n(0) returns 0 and consumes nothing.
func (r *Rand) Uint32n(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	threshold := -n % n // 2^32 mod n
	for {
		x := r.Uint32()
		if x >= threshold {
			return x % n
		}
	}
}

// Uint64n returns a uniform number in [0, n). For n < 2^32 it is Uint32n(n); otherwise
// it uses Lemire's method on Uint64. Uint64n(0) returns 0 and consumes nothing.
func (r *Rand) Uint64n(n uint64) uint64 {
	if n>>32 == 0 {
		return uint64(r.Uint32n(uint32(n)))
	}
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}

// Intn returns a uniform number in [0, n), as Uint64n does. A bound n <= 0 returns 0 and
// consumes nothing (no panic: a simulation must survive any input).
func (r *Rand) Intn(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return int64(r.Uint64n(uint64(n)))
}

// Hash mixes the whole generator state into d.
func (r *Rand) Hash(d *sim.Digest) {
	d.U64(r.state)
	d.U64(r.inc)
}

// State returns the generator state, for a snapshot.
func (r *Rand) State() (state, inc uint64) { return r.state, r.inc }

// SetState restores a state that State returned. It returns ErrBadState, and leaves r
// unchanged, for an even inc, which no seeding produces.
func (r *Rand) SetState(state, inc uint64) error {
	if inc&1 == 0 {
		return fmt.Errorf("%w: stream increment %#x is even; use a value State returned", ErrBadState, inc)
	}
	r.state, r.inc = state, inc
	return nil
}
