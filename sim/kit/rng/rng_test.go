package rng

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
)

// The reference values below are the "Round 1" output of pcg32-demo from the pcg-c-basic
// library (https://www.pcg-random.org/using-pcg-c-basic.html, pcg32-demo.c), which seeds
// with pcg32_srandom_r(&rng, 42, 54) and prints six pcg32_random_r outputs, then 65 coin
// tosses (pcg32_boundedrand_r(&rng, 2), 1 printed as H) and 33 dice rolls
// (pcg32_boundedrand_r(&rng, 6) + 1). They were also reproduced with the reference C code.
func TestKnownAnswers(t *testing.T) {
	r := NewStream(42, 54)
	t.Run("the first six outputs match the reference demo", func(t *testing.T) {
		want := []uint32{0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e}
		for i, w := range want {
			assert.Equalf(t, w, r.Uint32(), "output %d", i)
		}
	})
	t.Run("the next 65 coin tosses match the reference demo", func(t *testing.T) {
		var coins []byte
		for i := 0; i < 65; i++ {
			c := byte('T')
			if r.Uint32n(2) == 1 {
				c = 'H'
			}
			coins = append(coins, c)
		}
		assert.Equal(t, "HHTTTHTHHHTHTTTHHHHHTTTHHHTHTHTHTTHTTTHHHHHHTTTTHHTTTTTHTTTTTTTHT", string(coins))
	})
	t.Run("the next 33 dice rolls match the reference demo", func(t *testing.T) {
		want := []uint32{3, 4, 1, 1, 2, 2, 3, 2, 4, 3, 2, 4, 3, 3, 5, 2, 3, 1, 3, 1, 5, 1, 4, 1, 5, 6, 4, 6, 6, 2, 6, 3, 3}
		for i, w := range want {
			assert.Equalf(t, w, r.Uint32n(6)+1, "roll %d", i)
		}
	})
	t.Run("seed zero on stream zero matches the reference code", func(t *testing.T) {
		// pcg32_srandom_r(&rng, 0, 0), then three pcg32_random_r, run with the C reference.
		z := New(0)
		assert.Equal(t, uint32(0xe4c14788), z.Uint32())
		assert.Equal(t, uint32(0x379c6516), z.Uint32())
		assert.Equal(t, uint32(0x5c4ab3bb), z.Uint32())
	})
}

func TestUint64(t *testing.T) {
	t.Run("it joins two outputs high first", func(t *testing.T) {
		a, b := NewStream(42, 54), NewStream(42, 54)
		hi, lo := uint64(b.Uint32()), uint64(b.Uint32())
		assert.Equal(t, hi<<32|lo, a.Uint64())
	})
}

func TestBounded(t *testing.T) {
	t.Run("a zero or negative bound gives zero and consumes nothing", func(t *testing.T) {
		r := New(7)
		before := r
		assert.Equal(t, uint32(0), r.Uint32n(0))
		assert.Equal(t, uint64(0), r.Uint64n(0))
		assert.Equal(t, int64(0), r.Intn(0))
		assert.Equal(t, int64(0), r.Intn(-5))
		assert.Equal(t, before, r)
	})
	t.Run("a bound of one always gives zero", func(t *testing.T) {
		r := New(7)
		for i := 0; i < 100; i++ {
			require.Equal(t, int64(0), r.Intn(1))
		}
	})
	t.Run("small 64-bit bounds match Uint32n", func(t *testing.T) {
		a, b := New(9), New(9)
		for i := 0; i < 1000; i++ {
			require.Equal(t, uint64(a.Uint32n(1000)), b.Uint64n(1000))
		}
	})
	t.Run("draws stay below the bound for every size", func(t *testing.T) {
		r := New(11)
		for _, n := range []uint64{2, 3, 7, 1 << 31, 1<<32 - 1, 1 << 32, 1<<32 + 1, 1 << 63, math.MaxUint64, 3<<62 + 5} {
			for i := 0; i < 2000; i++ {
				require.Less(t, r.Uint64n(n), n)
			}
		}
		for i := 0; i < 2000; i++ {
			v := r.Intn(math.MaxInt64)
			require.GreaterOrEqual(t, v, int64(0))
		}
	})
	t.Run("a die is roughly fair", func(t *testing.T) {
		r := New(12)
		var counts [6]int
		for i := 0; i < 60000; i++ {
			counts[r.Intn(6)]++
		}
		for face, c := range counts {
			assert.InDeltaf(t, 10000, c, 500, "face %d", face)
		}
	})
	t.Run("large 64-bit bounds reach both halves", func(t *testing.T) {
		r := New(13)
		var low, high int
		n := uint64(3 << 62)
		for i := 0; i < 4000; i++ {
			if r.Uint64n(n) < n/2 {
				low++
			} else {
				high++
			}
		}
		assert.InDelta(t, 2000, low, 200)
		assert.InDelta(t, 2000, high, 200)
	})
}

func TestStreams(t *testing.T) {
	t.Run("different streams of one seed differ", func(t *testing.T) {
		a, b := NewStream(1, 1), NewStream(1, 2)
		assert.NotEqual(t, a.Uint64(), b.Uint64())
	})
	t.Run("different seeds of one stream differ", func(t *testing.T) {
		a, b := New(1), New(2)
		assert.NotEqual(t, a.Uint64(), b.Uint64())
	})
	t.Run("a copy forks the sequence", func(t *testing.T) {
		a := New(3)
		b := a
		assert.Equal(t, a.Uint64(), b.Uint64())
	})
}

func TestStateAndHash(t *testing.T) {
	t.Run("set state resumes the sequence exactly", func(t *testing.T) {
		a := New(5)
		a.Uint64()
		var b Rand
		require.NoError(t, b.SetState(a.State()))
		for i := 0; i < 100; i++ {
			require.Equal(t, a.Uint32(), b.Uint32())
		}
	})
	t.Run("an even increment is refused and leaves the generator unchanged", func(t *testing.T) {
		a := New(5)
		before := a
		err := a.SetState(1, 2)
		require.ErrorIs(t, err, ErrBadState)
		assert.Equal(t, before, a)
	})
	t.Run("the hash changes with every draw and matches equal states", func(t *testing.T) {
		a, b := New(5), New(5)
		h := func(r *Rand) uint64 {
			d := sim.NewDigest()
			r.Hash(&d)
			return d.Sum()
		}
		assert.Equal(t, h(&a), h(&b))
		a.Uint32()
		assert.NotEqual(t, h(&a), h(&b))
	})
}

func BenchmarkUint32n(b *testing.B) {
	r := New(1)
	var s uint32
	for i := 0; i < b.N; i++ {
		s += r.Uint32n(6)
	}
	_ = s
}
