package relay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInputDelayFollowsTheMeasuredRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		samples []int64 // RTT in microseconds
		want    int
	}{
		{"no sample keeps the initial delay", nil, 3},
		{"a loopback RTT needs one tick plus one", []int64{200, 200, 200}, 2},
		{"100 ms of steady RTT at 30 Hz needs 3 ticks", repeat(100_000, 50), 3},
		{"jitter raises the delay", []int64{50_000, 150_000, 50_000, 150_000, 50_000, 150_000, 50_000, 150_000}, 4},
		{"a huge RTT is capped at the maximum", []int64{5_000_000}, 10},
		{"zero samples are ignored", []int64{0, 0}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDelayEstimator(30, 3, 1, 10)
			got := d.current
			for _, s := range tt.samples {
				got = d.observe(s)
			}
			assert.Equal(t, tt.want, got)
		})
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
	var p []streamPoint
	for i := 0; i < 100_000; i++ {
		p = append(p, streamPoint{next: uint64(i * pointEvery), off: i * 100})
		if len(p) >= maxPoints {
			p = thinPoints(p)
		}
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
