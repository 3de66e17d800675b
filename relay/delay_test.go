package relay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInputDelayFollowsTheMeasuredRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		onFrame bool    // the client sends right after each frame
		samples []int64 // RTT in microseconds
		want    int
	}{
		{"no sample keeps the initial delay", false, nil, 3},
		{"a loopback RTT gets one tick", false, []int64{200, 200, 200}, 1},
		{"a LAN RTT of a few ms gets one tick", false, repeat(3_000, 20), 1},
		{"a loopback RTT gets no delay for a client that sends on frames", true, []int64{200, 200, 200}, 0},
		{"an RTT above a tick needs one more for a client that sends on frames", true, repeat(40_000, 50), 1},
		{"80 ms of steady RTT at 30 Hz needs 3 ticks", false, repeat(80_000, 100), 3},
		{"jitter is covered: 50/150 ms alternating needs 5 ticks (150 ms < 5 × 33.3)", false, []int64{50_000, 150_000, 50_000, 150_000, 50_000, 150_000, 50_000, 150_000}, 5},
		{"one sample held up by a lost packet does not move the delay", false, append(repeat(1_000, 20), 250_000), 1},
		{"nor do the normal samples after it", false, append(append(repeat(1_000, 20), 250_000), repeat(1_000, 5)...), 1},
		{"two late samples in the window do: 250 ms needs 8 ticks", false, append(repeat(1_000, 20), 250_000, 250_000), 8},
		{"a path that got slower is followed within two samples", false, append(repeat(10_000, 20), 120_000, 120_000), 4},
		{"two late samples hold until the first of them leaves the window", false, append(append(repeat(1_000, 20), 250_000, 250_000), repeat(1_000, rttWindow-2)...), 8},
		{"and are forgotten then", false, append(append(repeat(1_000, 20), 250_000, 250_000), repeat(1_000, rttWindow-1)...), 1},
		{"the first sample keeps half again as margin: 60 ms needs 3 ticks (2 without)", false, []int64{60_000}, 3},
		{"so do the second and third", false, []int64{60_000, 60_000, 60_000}, 3},
		{"from the fourth sample there is no start margin: a steady 60 ms needs 2 ticks", false, []int64{60_000, 60_000, 60_000, 60_000}, 2},
		{"a huge RTT is capped at the maximum", false, []int64{5_000_000}, 10},
		{"zero samples are ignored", false, []int64{0, 0}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDelayEstimator(30, 3, 1, 10, tt.onFrame, false)
			got := d.current
			for _, s := range tt.samples {
				got = d.observe(s)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestASteadyRTTsDelayCoversTheWorstMomentToSend(t *testing.T) {
	t.Parallel()
	const tick = 33_333 // µs at 30 Hz
	for rtt := int64(100); rtt < 300_000; rtt = rtt*5/4 + 1 {
		d := newDelayEstimator(30, 3, 1, 100, false, false)
		f := newDelayEstimator(30, 3, 1, 100, true, false)
		var any, onFrame int
		for range 200 {
			any, onFrame = d.observe(rtt), f.observe(rtt)
		}
		// Sent just before the next frame arrives: on time if RTT < delay ticks.
		assert.Less(t, rtt, int64(any)*tick, "rtt %d µs, delay %d", rtt, any)
		// Sent right after a frame: on time if RTT < delay+1 ticks.
		assert.Less(t, rtt, int64(onFrame+1)*tick, "rtt %d µs, on-frame delay %d", rtt, onFrame)
		assert.Equal(t, max(any-1, 0), onFrame)
	}
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestStreamPointsStayBoundedAndDenseWhereRecent(t *testing.T) {
	t.Parallel()
	var p streamPoints
	for i := 0; i < 100_000; i++ {
		next := uint64(i * pointEvery)
		require.True(t, p.due(next))
		p.add(streamPoint{next: next, off: i * 100})
		require.False(t, p.due(next+pointEvery-1), "not before pointEvery ticks")
	}
	assert.Less(t, len(p), maxPoints)
	assert.Equal(t, uint64(0), p[0].next, "the first point stays")
	last := p[len(p)-1]
	assert.Equal(t, uint64(99_999*pointEvery), last.next, "the newest point stays")
	for i := len(p) - maxPoints/4; i < len(p); i++ {
		assert.Equal(t, uint64(pointEvery), p[i].next-p[i-1].next, "recent points keep their spacing")
	}
	for i := 1; i < len(p); i++ {
		assert.Greater(t, p[i].next, p[i-1].next, "points stay in order")
	}
}

// TestAPredictingClientsDelayCoversTheUsualRoundTripNotNearlyEveryOne: with jitter a
// predicting player's delay covers the median round trip, not the second highest
// (fewer ticks, rollbacks shallower), and never less than the median; a steady RTT gets
// the same delay either way.
func TestAPredictingClientsDelayCoversTheUsualRoundTripNotNearlyEveryOne(t *testing.T) {
	t.Parallel()
	jittery := []int64{50_000, 150_000, 50_000, 150_000, 50_000, 150_000, 50_000, 150_000}
	plain, predicting := newDelayEstimator(30, 3, 1, 20, false, false), newDelayEstimator(30, 3, 1, 20, false, true)
	var a, b int
	for _, s := range jittery {
		a, b = plain.observe(s), predicting.observe(s)
	}
	assert.Equal(t, 5, a, "the second highest: 150 ms < 5 ticks")
	assert.Equal(t, 5, b, "the median of an even window is its upper middle: 150 ms here")
	plain, predicting = newDelayEstimator(30, 3, 1, 20, false, false), newDelayEstimator(30, 3, 1, 20, false, true)
	for _, s := range []int64{40_000, 40_000, 40_000, 40_000, 40_000, 200_000, 200_000} {
		a, b = plain.observe(s), predicting.observe(s)
	}
	assert.Equal(t, 7, a, "plain: the second highest, 200 ms")
	assert.Equal(t, 2, b, "predicting: the usual 40 ms")
	assert.Greater(t, int64(b)*33_333, int64(40_000), "never below the usual round trip")
	steady, steadyP := newDelayEstimator(30, 3, 1, 20, false, false), newDelayEstimator(30, 3, 1, 20, false, true)
	for range 100 {
		a, b = steady.observe(80_000), steadyP.observe(80_000)
	}
	assert.Equal(t, a, b)
}
