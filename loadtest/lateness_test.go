package loadtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAFrameHeldByAStallIsLateAndTheRunItStartsIsOneHitch(t *testing.T) {
	const period = 33 * time.Millisecond
	t0 := time.Unix(1000, 0)
	var l frameLateness
	at := func(tick uint64, extra time.Duration) time.Time { return t0.Add(time.Duration(tick)*period + extra) }

	for tick := range uint64(10) { // on time, with a little noise
		late, starts := l.frame(tick, at(tick, time.Duration(tick%3)*time.Millisecond), period)
		assert.LessOrEqual(t, late, 2*time.Millisecond)
		assert.False(t, starts)
	}
	// Tick 10 is held 200 ms (a retransmission timer); 11..15 come out with it.
	release := at(10, 200*time.Millisecond)
	var hitches int
	for tick := uint64(10); tick <= 15; tick++ {
		late, starts := l.frame(tick, release, period)
		assert.Equal(t, release.Sub(at(tick, 0)), late, "tick %d waited for the stall", tick)
		if starts {
			hitches++
		}
	}
	assert.Equal(t, 1, hitches, "frames released together are one hitch")
	late, starts := l.frame(16, at(16, 0), period)
	assert.Zero(t, late)
	assert.False(t, starts)
	_, starts = l.frame(17, at(17, 3*period), period)
	assert.True(t, starts, "a later stall is a hitch of its own")
	late, starts = l.frame(18, at(18, 2*period), period)
	assert.Equal(t, 2*period, late)
	assert.False(t, starts, "two ticks late is not a hitch")
}

func TestAFasterPathLowersTheBestAndLaterFramesAreMeasuredFromIt(t *testing.T) {
	const period = 10 * time.Millisecond
	t0 := time.Unix(2000, 0)
	var l frameLateness
	l.frame(0, t0.Add(50*time.Millisecond), period)
	l.frame(1, t0.Add(period+20*time.Millisecond), period) // 30 ms better: the new best
	late, _ := l.frame(2, t0.Add(2*period+50*time.Millisecond), period)
	assert.Equal(t, 30*time.Millisecond, late)
}
