package relay

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Matches take the least used phase, so they spread evenly over a tick period; matches
// of one phase seal at the same instants, to the nanosecond, however far apart they
// started; and a clock's tick `first` is sealed between one and two periods after it
// starts.
func TestMatchesSpreadOverThePhasesAndAPhaseSealsAsOne(t *testing.T) {
	const rate = 30
	period := time.Second / rate
	n := phaseCount(rate)
	require.Equal(t, 8, n, "30 Hz: 33.3 ms in phases of %s", phaseWidth)
	epoch := time.Unix(1_700_000_000, 123)
	p := newPhases(epoch)

	now := epoch.Add(5 * time.Second)
	count := map[*phaseTicker]int{}
	index := map[*phaseTicker]int{}
	var clocks []matchClock
	var taken []*phaseTicker
	var wakes []<-chan struct{}
	for i := range 3 * n {
		now = now.Add(time.Duration(i) * 7777777) // matches start at odd moments
		pt, c, wake := p.take(rate, 0, now)
		taken, wakes = append(taken, pt), append(wakes, wake)
		if _, ok := index[pt]; !ok {
			index[pt] = len(index)
		}
		phase := slices.Index(p.rates[rate], pt)
		count[pt]++
		clocks = append(clocks, c)
		start := c.deadline(0).Add(-period)
		assert.False(t, start.Before(now), "tick 0 starts at or after the match began")
		assert.Less(t, start.Sub(now), period, "and within a period of it")
		// Its phase: the offset from the epoch, modulo the period.
		off := (start.Sub(epoch)%period + period) % period
		assert.InDelta(t, float64(time.Duration(phase)*period/time.Duration(n)), float64(off), 1000, "phase %d (the grid is exact, the period here rounded: ns of drift)", phase)
	}
	require.Len(t, count, n)
	for pt, k := range count {
		assert.Equal(t, 3, k, "phase %d: the least used phase is taken", index[pt])
	}
	// Two matches of one phase, started seconds apart, seal at the same instants.
	a, b := clocks[0], clocks[n]
	require.Equal(t, a.origin, b.origin, "the same phase")
	for t0 := uint64(0); t0 < 1000; t0++ {
		d := b.deadline(t0)
		k := d.Sub(a.deadline(0)) * rate / time.Second // b's tick t0 against a's ticks
		if k >= 0 && a.deadline(uint64(k)).Equal(d) {
			continue
		}
		if a.deadline(uint64(k + 1)).Equal(d) {
			continue
		}
		t.Fatalf("b's tick %d (%s) is not on a's grid", t0, d)
	}

	// Released phases are taken again first.
	p.release(taken[3], wakes[3])
	p.release(taken[3+n], wakes[3+n])
	pt, _, wake := p.take(rate, 0, now)
	assert.Same(t, taken[3], pt)
	p.release(pt, wake)
	for i := range taken {
		if i != 3 && i != 3+n {
			p.release(taken[i], wakes[i])
		}
	}

	// A resumed match: its tick `first` is sealed a period or two from now.
	now = now.Add(time.Hour)
	pt, c, wake := p.take(rate, 12345, now)
	defer p.release(pt, wake)
	assert.False(t, c.deadline(12345).Before(now.Add(period)))
	assert.Less(t, c.deadline(12345).Sub(now), 2*period)
	assert.Less(t, c.deadline(12344).Sub(now), period, "the tick before it would have been sealed earlier")

	// Rates whose period is under two phases still have two.
	assert.Equal(t, 2, phaseCount(1000))
	assert.Equal(t, 2, phaseCount(200))
}

// The grid counts periods since the relay started: after a year at the highest rate the
// relay allows, a new match's clock still starts within a period of now and ticks
// forward, and a resumed one's too.
func TestAPhaseClockHoldsAfterAYearAtAThousandHertz(t *testing.T) {
	now := time.Now()
	for _, rate := range []int{1000, 240, 30} {
		p := newPhases(now.Add(-366 * 24 * time.Hour))
		period := time.Second / time.Duration(rate)
		for _, first := range []uint64{0, 1 << 40} {
			pt, c, wake := p.take(rate, first, now)
			p.release(pt, wake)
			d := c.deadline(first).Sub(now)
			assert.GreaterOrEqual(t, d, period, "rate %d, first %d", rate, first)
			assert.Less(t, d, 2*period+time.Nanosecond, "rate %d, first %d", rate, first)
			for i := first; i < first+3*uint64(rate); i++ {
				step := c.deadline(i + 1).Sub(c.deadline(i))
				require.InDelta(t, float64(period), float64(step), 1, "rate %d: tick %d to %d", rate, i, i+1)
			}
		}
	}
}

// A phase's ticker wakes every match of the phase at each instant of its grid, never
// before it, and stops when the last match leaves (goleak checks the goroutine ends).
func TestAPhaseWakesItsMatchesAtItsInstantsNeverBefore(t *testing.T) {
	const rate = 100
	p := newPhases(time.Now())
	var pts []*phaseTicker
	var wakes []<-chan struct{}
	var clocks []matchClock
	for range 2 * phaseCount(rate) {
		pt, c, w := p.take(rate, 0, time.Now())
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
			for now.Before(clocks[i].deadline(tick)) {
				select {
				case <-wakes[i]:
				case <-time.After(5 * time.Second):
					t.Fatalf("match %d: woken at %s, before tick %d's deadline %s, and never again", i, now, tick, clocks[i].deadline(tick))
				}
				now = time.Now()
			}
		}
	}
	for i := range pts {
		p.release(pts[i], wakes[i])
	}
}
