package loadtest

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram ranges, in microseconds.
const (
	histMin    = 1
	histMax    = 60_000_000 // 60 s
	histDigits = 3
	// seriesMax bounds the per-second jitter series: one hour.
	seriesMax = 3600
	shards    = 16
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// recorder holds the swarm's histograms, sharded so a thousand connections recording at
// the tick rate do not queue on one lock. Values are microseconds.
type recorder struct {
	t0     time.Time
	shards [shards]recShard
}

type recShard struct {
	mu sync.Mutex
	// latency is command→frame latency: from Send to applying the frame that holds it.
	latency *hdrhistogram.Histogram
	// jitter is |interval between consecutive frames − 1/tick rate|, per connection.
	jitter *hdrhistogram.Histogram
	// series is jitter by second since t0.
	series []*hdrhistogram.Histogram
}

func newRecorder(t0 time.Time) *recorder {
	r := &recorder{t0: t0}
	for i := range r.shards {
		r.shards[i].latency = newHist()
		r.shards[i].jitter = newHist()
	}
	return r
}

func (r *recorder) shard(i int) *recShard { return &r.shards[i%shards] }

func (s *recShard) latencyUs(v int64) {
	s.mu.Lock()
	_ = s.latency.RecordValue(clampHist(v))
	s.mu.Unlock()
}

func (s *recShard) jitterUs(v int64, sec int) {
	s.mu.Lock()
	_ = s.jitter.RecordValue(clampHist(v))
	if sec >= 0 && sec < seriesMax {
		for len(s.series) <= sec {
			s.series = append(s.series, nil)
		}
		if s.series[sec] == nil {
			s.series[sec] = hdrhistogram.New(histMin, histMax, 2)
		}
		_ = s.series[sec].RecordValue(clampHist(v))
	}
	s.mu.Unlock()
}

func clampHist(v int64) int64 { return min(max(v, histMin), histMax) }

// merged returns copies of the latency and jitter histograms of every shard.
func (r *recorder) merged() (latency, jitter *hdrhistogram.Histogram) {
	latency, jitter = newHist(), newHist()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		latency.Merge(s.latency)
		jitter.Merge(s.jitter)
		s.mu.Unlock()
	}
	return latency, jitter
}

// latencyP99 returns the p99 of command→frame latency so far, in µs.
func (r *recorder) latencyP99() int64 {
	l, _ := r.merged()
	return l.ValueAtQuantile(99)
}

// series returns the per-second jitter p99 and max, in milliseconds.
func (r *recorder) series() []SeriesPoint {
	var secs []*hdrhistogram.Histogram
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for sec, h := range s.series {
			if h == nil {
				continue
			}
			for len(secs) <= sec {
				secs = append(secs, nil)
			}
			if secs[sec] == nil {
				secs[sec] = hdrhistogram.New(histMin, histMax, 2)
			}
			secs[sec].Merge(h)
		}
		s.mu.Unlock()
	}
	out := make([]SeriesPoint, 0, len(secs))
	for sec, h := range secs {
		if h == nil {
			continue
		}
		out = append(out, SeriesPoint{Second: sec, JitterP99Ms: ms(h.ValueAtQuantile(99)), JitterMaxMs: ms(h.Max()), Frames: h.TotalCount()})
	}
	return out
}

func ms(us int64) float64 { return float64(us) / 1000 }
