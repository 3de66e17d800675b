package clock

import (
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A match takes the least used of the open phases, and a rate opens as many as its
// matches need at phaseMatches each, in an order that keeps the open ones spread over the
// period: a few matches share one wake-up a tick, many spread over every phase. Matches
// of one phase seal at the same instants, to the nanosecond, however far apart they
// started; and a clock's tick `first` is sealed between one and two periods after it
// starts.
func TestMatchesFillTheOpenPhasesSpreadOverThePeriodAndAPhaseSealsAsOne(t *testing.T) {
	const rate = 30
	period := time.Second / rate
	n := phaseCount(rate)
	require.Equal(t, 16, n, "30 Hz: 33.3 ms in phases of %s", phaseWidth)
	epoch := time.Unix(1_700_000_000, 123)
	p := NewPhases(epoch)

	now := epoch.Add(5 * time.Second)
	count := map[int]int{} // matches per phase index (its offset in the period / period/n)
	var clocks []Match
	var taken []*Ticker
	var wakes []<-chan struct{}
	var opened []int // phase indexes in the order they were first taken
	for i := range n*phaseMatches + 1 {
		now = now.Add(7777777) // matches start at odd moments
		pt, c, wake := p.Take(rate, 0, now)
		taken, wakes, clocks = append(taken, pt), append(wakes, wake), append(clocks, c)
		start := c.Deadline(0).Add(-period)
		assert.False(t, start.Before(now), "tick 0 starts at or after the match began")
		assert.Less(t, start.Sub(now), period, "and within a period of it")
		// Its phase: the offset from the epoch, modulo the period, is on the grid.
		off := (start.Sub(epoch)%period + period) % period
		phase := int((off + period/time.Duration(2*n)) * time.Duration(n) / period)
		require.InDelta(t, float64(time.Duration(phase)*period/time.Duration(n)), float64(off), 1000, "phase %d (the grid is exact, the period here rounded: ns of drift)", phase)
		if count[phase] == 0 {
			opened = append(opened, phase)
		}
		count[phase]++
		// Open phases: as many as the matches need; each full but the newest.
		require.Len(t, count, openPhases(i+1, n), "after %d matches", i+1)
		for _, ph := range opened[:len(opened)-1] {
			if len(opened) < n {
				require.Equal(t, phaseMatches, count[ph], "after %d matches, phase %d", i+1, ph)
			}
		}
	}
	assert.Equal(t, []int{0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15}, opened, "each new phase halves the widest gap")
	for ph, k := range count {
		assert.LessOrEqual(t, k, phaseMatches+1, "phase %d: every phase open, the least used is taken", ph)
	}
	assert.Equal(t, 1, openPhases(1, n))
	assert.Equal(t, 1, openPhases(phaseMatches, n))
	assert.Equal(t, 2, openPhases(phaseMatches+1, n))
	assert.Equal(t, n, openPhases(100*phaseMatches, n))

	// Two matches of one phase, started a third of a second apart, seal at the same
	// instants.
	a, b := clocks[0], clocks[phaseMatches-1]
	require.Equal(t, a.origin, b.origin, "the same phase")
	for t0 := uint64(0); t0 < 1000; t0++ {
		d := b.Deadline(t0)
		k := d.Sub(a.Deadline(0)) * rate / time.Second // b's tick t0 against a's ticks
		if k >= 0 && a.Deadline(uint64(k)).Equal(d) {
			continue
		}
		if a.Deadline(uint64(k + 1)).Equal(d) {
			continue
		}
		t.Fatalf("b's tick %d (%s) is not on a's grid", t0, d)
	}

	// Released phases are taken again first: two matches leave the second phase opened.
	a1, a2 := phaseMatches, phaseMatches+1
	require.NotSame(t, taken[0], taken[a1])
	p.Release(taken[a1], wakes[a1])
	p.Release(taken[a2], wakes[a2])
	pt, _, wake := p.Take(rate, 0, now)
	assert.Same(t, taken[a1], pt)
	p.Release(pt, wake)
	for i := range taken {
		if i != a1 && i != a2 {
			p.Release(taken[i], wakes[i])
		}
	}
	for _, pt := range p.rates[rate] {
		require.Zero(t, pt.load())
	}

	// A resumed match: its tick `first` is sealed a period or two from now.
	now = now.Add(time.Hour)
	pt, c, wake := p.Take(rate, 12345, now)
	defer p.Release(pt, wake)
	assert.False(t, c.Deadline(12345).Before(now.Add(period)))
	assert.Less(t, c.Deadline(12345).Sub(now), 2*period)
	assert.Less(t, c.Deadline(12344).Sub(now), period, "the tick before it would have been sealed earlier")

	// Rates whose period is under two phases still have two.
	assert.Equal(t, 2, phaseCount(1000))
	assert.Equal(t, 2, phaseCount(200))
}

// Whatever a rate's phase count, every prefix of the opening order is spread over the
// period: after k phases open, no gap between two of them is wider than the grid of the
// largest power of two ≤ k would leave.
func TestEveryPrefixOfThePhasesOpeningOrderIsSpreadOverThePeriod(t *testing.T) {
	for _, rate := range []int{1000, 144, 100, 60, 50, 30, 25, 20, 15, 10} {
		n := phaseCount(rate)
		order := spreadOrder(n)
		require.ElementsMatch(t, seq(n), order, "rate %d: every phase opens once", rate)
		for k := 1; k <= n; k++ {
			open := slices.Sorted(slices.Values(order[:k]))
			widest := n - open[k-1] + open[0] // around the end of the period
			for i := 1; i < k; i++ {
				widest = max(widest, open[i]-open[i-1])
			}
			grid := 1 << (bits.Len(uint(k)) - 1)
			require.LessOrEqual(t, widest, (n+grid-1)/grid, "rate %d (%d phases): the first %d open are %v", rate, n, k, open)
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// The grid counts periods since the relay started: after a year at the highest rate the
// relay allows, a new match's clock still starts within a period of now and ticks
// forward, and a resumed one's too.
func TestAPhaseClockHoldsAfterAYearAtAThousandHertz(t *testing.T) {
	now := time.Now()
	for _, rate := range []int{1000, 240, 30} {
		p := NewPhases(now.Add(-366 * 24 * time.Hour))
		period := time.Second / time.Duration(rate)
		for _, first := range []uint64{0, 1 << 40} {
			pt, c, wake := p.Take(rate, first, now)
			p.Release(pt, wake)
			d := c.Deadline(first).Sub(now)
			assert.GreaterOrEqual(t, d, period, "rate %d, first %d", rate, first)
			assert.Less(t, d, 2*period+time.Nanosecond, "rate %d, first %d", rate, first)
			for i := first; i < first+3*uint64(rate); i++ {
				step := c.Deadline(i + 1).Sub(c.Deadline(i))
				require.InDelta(t, float64(period), float64(step), 1, "rate %d: tick %d to %d", rate, i, i+1)
			}
		}
	}
}

// A phase's ticker wakes every match of the phase at each instant of its grid, never
// before it, and stops when the last match leaves (goleak checks the goroutine ends).
func TestAPhaseWakesItsMatchesAtItsInstantsNeverBefore(t *testing.T) {
	const rate = 100
	p := NewPhases(time.Now())
	var pts []*Ticker
	var wakes []<-chan struct{}
	var clocks []Match
	for range phaseMatches + 2 { // two phases open
		pt, c, w := p.Take(rate, 0, time.Now())
		pts, wakes, clocks = append(pts, pt), append(wakes, w), append(clocks, c)
	}
	for i := range wakes {
		// Tick t's deadline is an instant of the phase; the match wakes at it, not before.
		for tick := uint64(0); tick < 5; tick++ {
			select {
			case <-wakes[i]:
			case <-time.After(5 * time.Second):
				t.Fatalf("match %d: no wake-up for tick %d", i, tick)
			}
			now := time.Now()
			// Drain a wake-up left from before this match looked (it reads every tick's).
			for now.Before(clocks[i].Deadline(tick)) {
				select {
				case <-wakes[i]:
				case <-time.After(5 * time.Second):
					t.Fatalf("match %d: woken at %s, before tick %d's deadline %s, and never again", i, now, tick, clocks[i].Deadline(tick))
				}
				now = time.Now()
			}
		}
	}
	for i := range pts {
		p.Release(pts[i], wakes[i])
	}
}
