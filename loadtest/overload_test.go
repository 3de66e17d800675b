package loadtest

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateness is a scrape of the relay's tick-lateness histogram with n observations in
// each bucket of counts (cumulative, as Prometheus writes them), +Inf last.
func lateness(counts ...float64) promSeries {
	les := []string{"0.0001", "0.5", "10", "+Inf"}
	m := promSeries{}
	for i, le := range les {
		m[`tickrelay_tick_lateness_seconds_bucket{le="`+le+`"}`] = counts[i]
	}
	return m
}

func TestAnOverloadedRunsTickLatenessIsCappedAndMarkedNotInfinite(t *testing.T) {
	m0 := lateness(0, 0, 0, 0)
	v, over := promQuantile(m0, lateness(0, 0, 10, 1000), "tickrelay_tick_lateness_seconds", 0.99)
	assert.True(t, over, "p99 past the last finite bucket is marked")
	assert.Equal(t, 10.0, v, "and capped at that bucket's bound")
	v, over = promQuantile(m0, lateness(990, 1000, 1000, 1000), "tickrelay_tick_lateness_seconds", 0.99)
	assert.False(t, over)
	assert.Equal(t, 0.0001, v)
}

func TestAnOverloadedReportStillMarshalsEveryFigure(t *testing.T) {
	v, over := promQuantile(lateness(0, 0, 0, 0), lateness(0, 0, 0, 500), "tickrelay_tick_lateness_seconds", 0.99)
	rep := &Report{Relay: RelayCounts{TickLatenessMs: 1000 * v, TickLatenessOver: over, TicksLate: 500}}
	rec := newRecorder(time.Now())
	rec.shard(0).latencyUs(math.MaxInt64) // far past the histogram: clamped, not lost
	rec.shard(0).jitterUs(math.MaxInt64, 0)
	rep.latency, rep.jitter, _ = rec.merged()
	rep.Latency, rep.Jitter = percentiles(rep.latency), percentiles(rep.jitter)
	rep.LatencyHist = latencyBuckets(rep.latency)
	rep.Series = rec.series()
	b, err := json.Marshal(&Result{Run: rep})
	require.NoError(t, err)
	var back Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, back.Run.Relay.TickLatenessOver)
	assert.Equal(t, int64(500), back.Run.Relay.TicksLate)
	assert.InDelta(t, ms(histMax), back.Run.Latency.Max, ms(histMax)/100, "an overflowing latency is written at the histogram's cap")
	assert.Equal(t, int64(1), back.Run.Jitter.Count)
}
