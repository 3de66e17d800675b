package loadtest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlopeIsTheLeastSquaresFit(t *testing.T) {
	assert.InDelta(t, 2.0, slope([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}), 1e-12)
	assert.InDelta(t, 0.0, slope([]float64{0, 1, 2}, []float64{5, 5, 5}), 1e-12)
	// Noise around a line: 10 per hour.
	assert.InDelta(t, 10.0, slope([]float64{0, 0.5, 1, 1.5, 2}, []float64{101, 104, 111, 114, 121}), 0.5)
	assert.Zero(t, slope([]float64{1}, []float64{3}))
	assert.Zero(t, slope([]float64{1, 1}, []float64{3, 4}))
}

func TestSoakReportSeriesAndSlopes(t *testing.T) {
	var samples []SoakSample
	for i := range 7 {
		samples = append(samples, SoakSample{
			Seconds: float64(i * 600), Goroutines: 1000, HeapInuse: 100<<20 + int64(i)*(10<<20), RSS: 200 << 20,
		})
	}
	r := newSoakReport(10*time.Minute, samples)
	require.Len(t, r.Series, 3, "no relay series without a relay process")
	assert.Equal(t, "process goroutines", r.Series[0].Name)
	assert.Zero(t, r.Series[0].SlopePerHour)
	assert.InDelta(t, 60<<20, r.Series[1].SlopePerHour, 1) // 10 MiB per 10 minutes
	assert.InDelta(t, 60<<20, r.Series[1].SlopePerHourLastHalf, 1)
	assert.Equal(t, float64(100<<20), r.Series[1].First)
	assert.Equal(t, float64(160<<20), r.Series[1].Max)
	var text bytes.Buffer
	r.WriteText(&text)
	assert.Contains(t, text.String(), "slope +60.0 MiB/h")
}

// A tiny soak: 3 s sampled every second, so at least four samples (window start, three
// ticks or the end), every series present, and no failure.
func TestATinySoakSamplesGoroutinesHeapAndRSS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Matches: 2, Players: 2, Spectators: 1, Duration: 3 * time.Second, Warmup: -1, TickRate: 60, CommandRate: 10, Seed: 3, SampleEvery: time.Second,
		JitterThreshold: time.Hour}) // a test holds correctness, not the speed of a shared machine
	require.NoError(t, err)
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log("\n" + text.String())
	require.NotNil(t, rep.Soak)
	assert.GreaterOrEqual(t, len(rep.Soak.Samples), 4)
	assert.Less(t, rep.Soak.Samples[0].Seconds, 0.5, "the first sample opens the window")
	last := rep.Soak.Samples[len(rep.Soak.Samples)-1]
	assert.InDelta(t, 3, last.Seconds, 1)
	for _, s := range rep.Soak.Samples {
		assert.Positive(t, s.Goroutines)
		assert.Positive(t, s.HeapInuse)
		assert.Positive(t, s.RSS)
	}
	require.Len(t, rep.Soak.Series, 3)
	assert.True(t, rep.Verdict.Pass, "%s %v", rep.Verdict, rep.Dropped.Reasons)
	assert.Contains(t, text.String(), "slope")
	assert.NotEmpty(t, rep.Series)
}

// A soak stops when its context ends (SIGINT in the command) and still reports.
func TestASoakStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep, err := Run(ctx, Config{Matches: 1, Players: 2, Spectators: 0, Duration: time.Hour, Warmup: -1, TickRate: 60, Seed: 4, SampleEvery: time.Second})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 30*time.Second)
	require.NotNil(t, rep.Soak)
	assert.GreaterOrEqual(t, len(rep.Soak.Samples), 2)
	assert.Less(t, rep.Seconds, 10.0)
}

func TestSeriesFoldingKeepsOnePointPerSecond(t *testing.T) {
	r := newRecorder(time.Now())
	for sec := range 10 {
		for i := range 32 {
			r.shard(i).jitterUs(int64(1000*(sec+1)), sec)
		}
	}
	r.fold(5)
	for i := range r.shards {
		assert.Len(t, r.shards[i].series, 5, "seconds 5..9 stay as histograms")
	}
	r.shard(0).jitterUs(99_000, 2) // a straggler for a folded second is dropped
	s := r.series()
	require.Len(t, s, 10)
	for sec, p := range s {
		assert.Equal(t, sec, p.Second)
		assert.Equal(t, int64(32), p.Frames)
		assert.InDelta(t, float64(sec+1), p.JitterMaxMs, 0.1)
	}
	for i := range r.shards {
		assert.Empty(t, r.shards[i].series)
	}
}
