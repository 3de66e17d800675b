package relay

import (
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
	count := make([]int, n)
	var clocks []matchClock
	for i := range 3 * n {
		now = now.Add(time.Duration(i) * 7777777) // matches start at odd moments
		phase, c := p.take(rate, 0, now)
		count[phase]++
		clocks = append(clocks, c)
		start := c.deadline(0).Add(-period)
		assert.False(t, start.Before(now), "tick 0 starts at or after the match began")
		assert.Less(t, start.Sub(now), period, "and within a period of it")
		// Its phase: the offset from the epoch, modulo the period.
		off := (start.Sub(epoch)%period + period) % period
		assert.InDelta(t, float64(time.Duration(phase)*period/time.Duration(n)), float64(off), 1000, "phase %d (the grid is exact, the period here rounded: ns of drift)", phase)
	}
	for i, k := range count {
		assert.Equal(t, 3, k, "phase %d: the least used phase is taken", i)
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
	p.release(rate, 3)
	p.release(rate, 3)
	phase, _ := p.take(rate, 0, now)
	assert.Equal(t, 3, phase)

	// A resumed match: its tick `first` is sealed a period or two from now.
	now = now.Add(time.Hour)
	_, c := p.take(rate, 12345, now)
	assert.False(t, c.deadline(12345).Before(now.Add(period)))
	assert.Less(t, c.deadline(12345).Sub(now), 2*period)
	assert.Less(t, c.deadline(12344).Sub(now), period, "the tick before it would have been sealed earlier")

	// Rates whose period is under a phase have one phase.
	assert.Equal(t, 1, phaseCount(1000))
}
