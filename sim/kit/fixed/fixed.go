package fixed

import (
	"math"
	"math/bits"
	"strconv"
)

// F is a signed fixed-point number with 16 fractional bits: the value of F(n) is n/65536.
type F int64

// Shift is the number of fractional bits.
const Shift = 16

// Constants of F.
const (
	// One is 1.0.
	One F = 1 << Shift
	// Half is 0.5.
	Half F = 1 << (Shift - 1)
	// Max is the largest F, 2^47 - 2^-16.
	Max F = math.MaxInt64
	// Min is the smallest F, -2^47.
	Min F = math.MinInt64
)

// FromInt returns n as an F, saturating when |n| does not fit (beyond ±2^47).
func FromInt(n int64) F {
	switch {
	case n > int64(Max>>Shift):
		return Max
	case n < int64(Min>>Shift):
		return Min
	}
	return F(n << Shift)
}

// FromRatio returns num/den rounded toward negative infinity, saturating; a zero den
// gives Max, Min or 0 by the sign of num, as Div does.
func FromRatio(num, den int64) F { return F(num).Div(F(den)) }

// Int returns f rounded toward negative infinity to a whole number.
func (f F) Int() int64 { return int64(f) >> Shift }

// Frac returns the fractional part f - floor(f), in [0, One).
func (f F) Frac() F { return f & (One - 1) }

// Add returns f+g, saturating at Min and Max.
func (f F) Add(g F) F {
	s := f + g
	// Overflow happened iff f and g have the same sign and s has the other one.
	if (f >= 0) == (g >= 0) && (s >= 0) != (f >= 0) {
		if f >= 0 {
			return Max
		}
		return Min
	}
	return s
}

// Sub returns f-g, saturating at Min and Max.
func (f F) Sub(g F) F {
	d := f - g
	// Overflow happened iff f and g have different signs and d's sign differs from f's.
	if (f >= 0) != (g >= 0) && (d >= 0) != (f >= 0) {
		if f >= 0 {
			return Max
		}
		return Min
	}
	return d
}

// Neg returns -f, saturating: Min.Neg() is Max.
func (f F) Neg() F {
	if f == Min {
		return Max
	}
	return -f
}

// Abs returns |f|, saturating: Min.Abs() is Max.
func (f F) Abs() F {
	if f < 0 {
		return f.Neg()
	}
	return f
}

// Cmp returns -1, 0 or +1 as f is less than, equal to or greater than g.
func (f F) Cmp(g F) int {
	switch {
	case f < g:
		return -1
	case f > g:
		return 1
	}
	return 0
}

// Min returns the smaller of f and g.
func (f F) Min(g F) F {
	if g < f {
		return g
	}
	return f
}

// Max returns the larger of f and g.
func (f F) Max(g F) F {
	if g > f {
		return g
	}
	return f
}

// Clamp returns f limited to [lo, hi]. If lo > hi the result is lo.
func (f F) Clamp(lo, hi F) F {
	if f > hi {
		f = hi
	}
	if f < lo {
		f = lo
	}
	return f
}

// Mul returns f*g rounded toward negative infinity, saturating. The product is exact
// (128 bits) before rounding.
func (f F) Mul(g F) F {
	hi, lo := bits.Mul64(mag(f), mag(g))
	// Divide the 128-bit magnitude by 2^16.
	q := lo>>Shift | hi<<(64-Shift)
	qhi := hi >> Shift
	rem := lo&(1<<Shift-1) != 0
	return fromMag(qhi, q, rem, (f < 0) != (g < 0))
}

// Div returns f/g rounded toward negative infinity, saturating. A zero divisor gives Max
// for a positive f, Min for a negative f and 0 for a zero f.
func (f F) Div(g F) F {
	if g == 0 {
		switch {
		case f > 0:
			return Max
		case f < 0:
			return Min
		}
		return 0
	}
	m := mag(f)
	return divMag(m>>(64-Shift), m<<Shift, mag(g), (f < 0) != (g < 0))
}

// MulDiv returns f*g/h with a 128-bit intermediate product, rounded toward negative
// infinity and saturating; a zero h behaves as in Div by the sign of f*g. Use it to scale
// a vector by step/length without losing precision.
func MulDiv(f, g, h F) F {
	neg := (f < 0) != (g < 0)
	hi, lo := bits.Mul64(mag(f), mag(g))
	if h == 0 {
		switch {
		case hi == 0 && lo == 0:
			return 0
		case neg:
			return Min
		}
		return Max
	}
	return divMag(hi, lo, mag(h), neg != (h < 0))
}

// Sqrt returns the square root of f, the exact floor of the true root in F units. A
// negative f gives 0.
func (f F) Sqrt() F {
	if f <= 0 {
		return 0
	}
	// sqrt(f/2^16) * 2^16 = sqrt(f * 2^16).
	u := uint64(f)
	return F(isqrt128(u>>(64-Shift), u<<Shift))
}

// Hypot returns sqrt(x*x + y*y), the exact floor of the true length, saturating at Max.
func Hypot(x, y F) F {
	xh, xl := bits.Mul64(mag(x), mag(x))
	yh, yl := bits.Mul64(mag(y), mag(y))
	lo, c := bits.Add64(xl, yl, 0)
	hi, c2 := bits.Add64(xh, yh, c)
	if c2 != 0 {
		return Max // the sum reached 2^128; its root is beyond 2^63
	}
	r := isqrt128(hi, lo)
	if r > uint64(Max) {
		return Max
	}
	return F(r)
}

// String formats f as its exact decimal value, e.g. "-1.5" or "0.0000152587890625".
func (f F) String() string {
	var buf [48]byte
	return string(f.AppendText(buf[:0]))
}

// AppendText appends the exact decimal value of f, as String formats it, to b.
func (f F) AppendText(b []byte) []byte {
	if f < 0 {
		b = append(b, '-')
	}
	m := mag(f)
	b = strconv.AppendUint(b, m>>Shift, 10)
	frac := m & (1<<Shift - 1)
	if frac == 0 {
		return b
	}
	// frac/2^16 = frac*5^16/10^16, and frac*5^16 < 2^16*5^16 = 10^16 fits in 64 bits.
	const pow5 = 152587890625 // 5^16
	digits := frac * pow5
	var d [16]byte
	for i := 15; i >= 0; i-- {
		d[i] = byte('0' + digits%10)
		digits /= 10
	}
	n := 16
	for n > 0 && d[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, d[:n]...)
}

// mag returns |f| as a uint64; |Min| = 2^63 fits.
func mag(f F) uint64 {
	if f < 0 {
		return uint64(-f) // wraps to 2^63 for Min, which is the right magnitude
	}
	return uint64(f)
}

// divMag returns (hi:lo)/d with the sign neg, rounded toward negative infinity, saturating.
func divMag(hi, lo, d uint64, neg bool) F {
	if hi >= d {
		// The quotient needs more than 64 bits.
		if neg {
			return Min
		}
		return Max
	}
	q, r := bits.Div64(hi, lo, d)
	return fromMag(0, q, r != 0, neg)
}

// fromMag turns the magnitude qhi:q (already divided, with rem set when the division had a
// remainder) and a sign into an F, flooring and saturating.
func fromMag(qhi, q uint64, rem, neg bool) F {
	if !neg {
		if qhi != 0 || q > uint64(Max) {
			return Max
		}
		return F(q)
	}
	if rem {
		// floor of a negative non-integer is one further from zero.
		var c uint64
		q, c = bits.Add64(q, 1, 0)
		qhi += c
	}
	if qhi != 0 || q > 1<<63 {
		return Min
	}
	return F(-int64(q)) // q == 2^63 wraps to Min, which is right
}

// isqrt128 returns floor(sqrt(hi:lo)).
func isqrt128(hi, lo uint64) uint64 {
	if hi == 0 {
		return isqrt64(lo)
	}
	// Newton's method from above: r0 >= sqrt(n), and every iterate stays >= floor(sqrt(n))
	// (AM-GM), so r > hi holds (n >= 2^64 means sqrt(n) >= 2^32 > hi) and Div64 cannot
	// overflow.
	n := 128 - bits.LeadingZeros64(hi)
	r := uint64(1) << ((n + 1) / 2)
	if (n+1)/2 >= 64 {
		r = math.MaxUint64
	}
	for {
		q, _ := bits.Div64(hi, lo, r)
		y := r/2 + q/2 + (r&1+q&1)/2 // (r+q)/2 without overflow
		if y >= r {
			return r
		}
		r = y
	}
}

// isqrt64 returns floor(sqrt(n)).
func isqrt64(n uint64) uint64 {
	if n < 2 {
		return n
	}
	k := 64 - bits.LeadingZeros64(n)
	r := uint64(1) << ((k + 1) / 2) // >= sqrt(n), and at most 2^32
	for {
		y := (r + n/r) / 2
		if y >= r {
			return r
		}
		r = y
	}
}
