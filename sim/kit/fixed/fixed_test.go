package fixed

import (
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConstants(t *testing.T) {
	t.Run("one is 65536 raw and converts back to 1", func(t *testing.T) {
		assert.Equal(t, F(65536), One)
		assert.Equal(t, int64(1), One.Int())
		assert.Equal(t, One, Half.Add(Half))
	})
	t.Run("max and min are the int64 limits", func(t *testing.T) {
		assert.Equal(t, F(math.MaxInt64), Max)
		assert.Equal(t, F(math.MinInt64), Min)
		assert.Equal(t, int64(1)<<47-1, Max.Int())
		assert.Equal(t, -int64(1)<<47, Min.Int())
	})
}

func TestFromIntAndInt(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want F
	}{
		{"zero stays zero", 0, 0},
		{"a small positive value shifts", 3, 3 * One},
		{"a small negative value shifts", -3, -3 * One},
		{"the largest whole value fits", 1<<47 - 1, F((1<<47 - 1) << 16)},
		{"the smallest whole value fits", -1 << 47, Min},
		{"one past the largest saturates at max", 1 << 47, Max},
		{"one past the smallest saturates at min", -1<<47 - 1, Min},
		{"int64 max saturates at max", math.MaxInt64, Max},
		{"int64 min saturates at min", math.MinInt64, Min},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, FromInt(tt.in)) })
	}
	t.Run("int floors negative fractions", func(t *testing.T) {
		assert.Equal(t, int64(-1), F(-1).Int())
		assert.Equal(t, int64(-2), FromRatio(-3, 2).Int())
		assert.Equal(t, int64(1), FromRatio(3, 2).Int())
		assert.Equal(t, Half, FromRatio(-3, 2).Frac())
	})
}

func TestAddSub(t *testing.T) {
	tests := []struct {
		name      string
		a, b      F
		sum, diff F
	}{
		{"small values add exactly", One, Half, One + Half, Half},
		{"max plus one saturates at max", Max, One, Max, Max - One},
		{"min minus one saturates at min", Min, -One, Min, Min + One},
		{"max plus max saturates at max", Max, Max, Max, 0},
		{"min plus min saturates at min", Min, Min, Min, 0},
		{"max minus min saturates at max", Max, Min, -1, Max},
		{"min minus max saturates at min", Min, Max, -1, Min},
		{"min minus one raw saturates at min", Min, 1, Min + 1, Min},
		{"zero minus min saturates at max", 0, Min, Min, Max},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.sum, tt.a.Add(tt.b), "add")
			assert.Equal(t, tt.diff, tt.a.Sub(tt.b), "sub")
		})
	}
}

func TestNegAbsCmpMinMax(t *testing.T) {
	t.Run("neg of min saturates at max", func(t *testing.T) { assert.Equal(t, Max, Min.Neg()) })
	t.Run("abs of min saturates at max", func(t *testing.T) { assert.Equal(t, Max, Min.Abs()) })
	t.Run("neg and abs of ordinary values are exact", func(t *testing.T) {
		assert.Equal(t, -One, One.Neg())
		assert.Equal(t, Half, (-Half).Abs())
		assert.Equal(t, Min+1, Max.Neg())
	})
	t.Run("cmp orders values", func(t *testing.T) {
		assert.Equal(t, -1, Min.Cmp(Max))
		assert.Equal(t, 0, One.Cmp(One))
		assert.Equal(t, 1, One.Cmp(-One))
	})
	t.Run("min max and clamp pick the right bound", func(t *testing.T) {
		assert.Equal(t, -One, One.Min(-One))
		assert.Equal(t, One, One.Max(-One))
		assert.Equal(t, One, FromInt(5).Clamp(0, One))
		assert.Equal(t, F(0), FromInt(-5).Clamp(0, One))
		assert.Equal(t, Half, Half.Clamp(0, One))
	})
}

func TestMul(t *testing.T) {
	tests := []struct {
		name string
		a, b F
		want F
	}{
		{"whole numbers multiply exactly", FromInt(3), FromInt(-7), FromInt(-21)},
		{"halves multiply to a quarter", Half, Half, One / 4},
		{"a positive inexact product floors toward zero", 3, Half, 1},
		{"a negative inexact product floors away from zero", -3, Half, -2},
		{"the smallest negative product floors to minus one raw", -1, 1, -1},
		{"the smallest positive product floors to zero", 1, 1, 0},
		{"max times one is max", Max, One, Max},
		{"min times one is min", Min, One, Min},
		{"max times two saturates at max", Max, 2 * One, Max},
		{"max times minus two saturates at min", Max, -2 * One, Min},
		{"min times minus one saturates at max", Min, -One, Max},
		{"min times min saturates at max", Min, Min, Max},
		{"min times max saturates at min", Min, Max, Min},
		{"zero times min is zero", 0, Min, 0},
		{"large values multiply exactly", FromInt(1 << 20), FromInt(1 << 20), FromInt(1 << 40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.a.Mul(tt.b)) })
	}
}

func TestDiv(t *testing.T) {
	tests := []struct {
		name string
		a, b F
		want F
	}{
		{"whole numbers divide exactly", FromInt(21), FromInt(-7), FromInt(-3)},
		{"one divided by three floors", One, FromInt(3), 21845},
		{"minus one divided by three floors away from zero", -One, FromInt(3), -21846},
		{"one divided by minus three floors away from zero", One, FromInt(-3), -21846},
		{"a positive dividend over zero gives max", One, 0, Max},
		{"a negative dividend over zero gives min", -One, 0, Min},
		{"zero over zero gives zero", 0, 0, 0},
		{"min over zero gives min", Min, 0, Min},
		{"max over a tiny value saturates at max", Max, 1, Max},
		{"max over a tiny negative value saturates at min", Max, -1, Min},
		{"min over minus one saturates at max", Min, -One, Max},
		{"min over one is min", Min, One, Min},
		{"min over half saturates at min", Min, Half, Min},
		{"max over max is one", Max, Max, One},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.a.Div(tt.b)) })
	}
	t.Run("from ratio of a third matches div", func(t *testing.T) {
		assert.Equal(t, One.Div(FromInt(3)), FromRatio(1, 3))
		assert.Equal(t, F(6553), FromRatio(100, 1000))
		assert.Equal(t, Max, FromRatio(1, 0))
	})
}

func TestMulDiv(t *testing.T) {
	t.Run("an intermediate beyond 64 bits stays exact", func(t *testing.T) {
		assert.Equal(t, FromInt(1<<40), MulDiv(FromInt(1<<40), FromInt(1<<30), FromInt(1<<30)))
	})
	t.Run("a negative inexact quotient floors", func(t *testing.T) {
		assert.Equal(t, F(-2), MulDiv(-3, 1, 2))
	})
	t.Run("a zero divisor saturates by the sign of the product", func(t *testing.T) {
		assert.Equal(t, Max, MulDiv(One, One, 0))
		assert.Equal(t, Min, MulDiv(-One, One, 0))
		assert.Equal(t, F(0), MulDiv(0, One, 0))
	})
}

func TestSqrt(t *testing.T) {
	tests := []struct {
		name string
		in   F
		want F
	}{
		{"the root of zero is zero", 0, 0},
		{"the root of one is one", One, One},
		{"the root of four is two", FromInt(4), FromInt(2)},
		{"the root of a quarter is a half", One / 4, Half},
		{"the root of 65536 is 256", FromInt(65536), FromInt(256)},
		{"the root of two floors", FromInt(2), 92681}, // sqrt(2)*65536 = 92681.9
		{"the root of one raw unit is 256 raw", 1, 256},
		{"a negative value gives zero", -One, 0},
		{"min gives zero", Min, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.in.Sqrt()) })
	}
	check := func(t *testing.T, x F) {
		t.Helper()
		r := uint64(x.Sqrt())
		// x in F units is x*2^16 in the root's square units: r*r <= x<<16 < (r+1)*(r+1).
		nh, nl := uint64(x)>>48, uint64(x)<<16
		sh, sl := bits.Mul64(r, r)
		assert.True(t, sh < nh || (sh == nh && sl <= nl), "r*r <= x for x=%d r=%d", x, r)
		th, tl := bits.Mul64(r+1, r+1)
		assert.True(t, th > nh || (th == nh && tl > nl), "(r+1)^2 > x for x=%d r=%d", x, r)
	}
	t.Run("max and its neighbours floor exactly", func(t *testing.T) {
		for _, x := range []F{Max, Max - 1, Max / 2, 1 << 48, 1<<48 - 1, 1<<48 + 1, 2, 3, 1 << 62} {
			check(t, x)
		}
	})
	t.Run("perfect squares and their neighbours floor exactly", func(t *testing.T) {
		for i := int64(1); i < 3000; i += 7 {
			sq := FromInt(i * i)
			require.Equal(t, FromInt(i), sq.Sqrt())
			check(t, sq-1)
			check(t, sq+1)
		}
	})
	t.Run("random values floor exactly", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 20000; i++ {
			check(t, F(r.Int64()>>(r.IntN(63))))
		}
	})
}

func TestHypot(t *testing.T) {
	t.Run("a 3-4-5 triangle is exact", func(t *testing.T) {
		assert.Equal(t, FromInt(5), Hypot(FromInt(3), FromInt(-4)))
	})
	t.Run("a unit diagonal floors to the root of two", func(t *testing.T) {
		assert.Equal(t, FromInt(2).Sqrt(), Hypot(One, -One))
	})
	t.Run("huge sides saturate at max", func(t *testing.T) {
		assert.Equal(t, Max, Hypot(Min, Min))
		assert.Equal(t, Max, Hypot(Max, 0))
	})
}

func TestString(t *testing.T) {
	tests := []struct {
		in   F
		want string
	}{
		{0, "0"},
		{One, "1"},
		{-One - Half, "-1.5"},
		{1, "0.0000152587890625"},
		{-1, "-0.0000152587890625"},
		{FromRatio(1, 4), "0.25"},
		{Max, "140737488355327.9999847412109375"},
		{Min, "-140737488355328"},
	}
	for _, tt := range tests {
		t.Run("it formats "+tt.want, func(t *testing.T) { assert.Equal(t, tt.want, tt.in.String()) })
	}
}

// ref computes floor(a*b/c) with math/big and saturates, the definition Mul, Div and
// MulDiv implement.
func ref(a, b, c *big.Int) F {
	num := new(big.Int).Mul(a, b)
	if c.Sign() == 0 {
		switch num.Sign() {
		case 1:
			return Max
		case -1:
			return Min
		}
		return 0
	}
	q := new(big.Int)
	m := new(big.Int)
	q.DivMod(num, c, m) // Euclidean: m >= 0
	if c.Sign() < 0 && m.Sign() != 0 {
		// Euclidean division rounds up for a negative divisor; floor is one less.
		q.Sub(q, big.NewInt(1))
	}
	if q.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return Max
	}
	if q.Cmp(big.NewInt(math.MinInt64)) < 0 {
		return Min
	}
	return F(q.Int64())
}

func TestMulDivAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 54))
	one := big.NewInt(int64(One))
	pick := func() F {
		switch r.IntN(8) {
		case 0:
			return []F{0, 1, -1, One, -One, Max, Min, Half, -Half}[r.IntN(9)]
		case 1, 2:
			return F(r.Int64() >> r.IntN(64)) // positive, many magnitudes
		case 3, 4:
			return -F(r.Int64() >> r.IntN(64)) // negative, many magnitudes
		}
		return F(r.Uint64())
	}
	for i := 0; i < 200000; i++ {
		a, b, c := pick(), pick(), pick()
		ba, bb, bc := big.NewInt(int64(a)), big.NewInt(int64(b)), big.NewInt(int64(c))
		if got, want := a.Mul(b), ref(ba, bb, one); got != want {
			t.Fatalf("Mul(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := a.Div(b), ref(ba, one, bb); got != want {
			t.Fatalf("Div(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := MulDiv(a, b, c), ref(ba, bb, bc); got != want {
			t.Fatalf("MulDiv(%d, %d, %d) = %d, want %d", a, b, c, got, want)
		}
		// Hypot against big: floor(sqrt(a^2+b^2)) saturated.
		s := new(big.Int).Add(new(big.Int).Mul(ba, ba), new(big.Int).Mul(bb, bb))
		h := s.Sqrt(s)
		want := Max
		if h.IsInt64() {
			want = F(h.Int64())
		}
		if got := Hypot(a, b); got != want {
			t.Fatalf("Hypot(%d, %d) = %d, want %d", a, b, got, want)
		}
	}
}

func FuzzArith(f *testing.F) {
	f.Add(int64(1), int64(2), int64(3))
	f.Add(int64(math.MinInt64), int64(-1), int64(0))
	one := big.NewInt(int64(One))
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		ba, bb, bc := big.NewInt(a), big.NewInt(b), big.NewInt(c)
		assert.Equal(t, ref(ba, bb, one), F(a).Mul(F(b)))
		assert.Equal(t, ref(ba, one, bb), F(a).Div(F(b)))
		assert.Equal(t, ref(ba, bb, bc), MulDiv(F(a), F(b), F(c)))
	})
}

func BenchmarkMul(b *testing.B) {
	x, y := FromRatio(7, 3), FromRatio(-5, 11)
	for i := 0; i < b.N; i++ {
		x = x.Mul(y).Add(One)
	}
	_ = x
}

func BenchmarkHypot(b *testing.B) {
	x, y := FromRatio(70, 3), FromRatio(-50, 11)
	var s F
	for i := 0; i < b.N; i++ {
		s += Hypot(x+F(i&1023), y)
	}
	_ = s
}
