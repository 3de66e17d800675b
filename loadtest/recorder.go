package loadtest

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickrelay/tickrelay/bot"
)

// Histogram ranges, in microseconds: a bot's (1 µs .. 60 s).
const (
	histMin    = bot.HistMinUs
	histMax    = bot.HistMaxUs
	histDigits = bot.HistDigits
	// seriesMax bounds the per-second jitter series: one week. A finished second costs a
	// SeriesPoint, not a histogram (see fold), so a long soak stays small.
	seriesMax = 7 * 24 * 3600
	shards    = 16
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// recorder holds the swarm's histograms, sharded so a thousand connections recording at
// the tick rate do not queue on one lock. Values are microseconds.
type recorder struct {
	t0     time.Time
	shards [shards]recShard

	// points are the seconds already folded out of the shards.
	pmu    sync.Mutex
	points map[int]SeriesPoint
}

type recShard struct {
	mu sync.Mutex
	// latency is command→frame latency: from Send to applying the frame that holds it.
	latency *hdrhistogram.Histogram
	// jitter is |interval between consecutive frames − 1/tick rate|, per connection.
	jitter *hdrhistogram.Histogram
	// perceived is, for predicting bots, from Send to the command showing in the head.
	perceived *hdrhistogram.Histogram
	// arrival is the same jitter from the kernel's receive stamps (rxStamp): the
	// sender's timing without the receiver's scheduling; empty where there are none.
	arrival *hdrhistogram.Histogram
	// lateness is how late each live frame reached a player against its best (lateness).
	lateness *hdrhistogram.Histogram
	// series is jitter by second since t0, for the seconds not folded yet.
	series map[int]*hdrhistogram.Histogram
}

func newRecorder(t0 time.Time) *recorder {
	r := &recorder{t0: t0, points: map[int]SeriesPoint{}}
	for i := range r.shards {
		r.shards[i].latency = newHist()
		r.shards[i].jitter = newHist()
		r.shards[i].arrival = newHist()
		r.shards[i].perceived = newHist()
		r.shards[i].lateness = newHist()
		r.shards[i].series = map[int]*hdrhistogram.Histogram{}
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
		h := s.series[sec]
		if h == nil {
			h = hdrhistogram.New(histMin, histMax, 2)
			s.series[sec] = h
		}
		_ = h.RecordValue(clampHist(v))
	}
	s.mu.Unlock()
}

func (s *recShard) perceivedUs(v int64) { s.record(s.perceived, v) }
func (s *recShard) latenessUs(v int64)  { s.record(s.lateness, v) }

// record adds v, clamped, to h, one of the shard's histograms.
func (s *recShard) record(h *hdrhistogram.Histogram, v int64) {
	s.mu.Lock()
	_ = h.RecordValue(clampHist(v))
	s.mu.Unlock()
}

// perceivedMerged and latenessMerged return a copy of every shard's perceived, or
// lateness, histogram merged.
func (r *recorder) perceivedMerged() *hdrhistogram.Histogram {
	return r.mergedOf(func(s *recShard) *hdrhistogram.Histogram { return s.perceived })
}

func (r *recorder) latenessMerged() *hdrhistogram.Histogram {
	return r.mergedOf(func(s *recShard) *hdrhistogram.Histogram { return s.lateness })
}

// mergedOf returns a copy of the histogram of every shard that of picks, merged.
func (r *recorder) mergedOf(of func(*recShard) *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	h := newHist()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		h.Merge(of(s))
		s.mu.Unlock()
	}
	return h
}

func (s *recShard) arrivalUs(v int64) {
	s.mu.Lock()
	_ = s.arrival.RecordValue(clampHist(v))
	s.mu.Unlock()
}

func clampHist(v int64) int64 { return min(max(v, histMin), histMax) }

// merged returns copies of the latency, jitter and arrival histograms of every shard.
func (r *recorder) merged() (latency, jitter, arrival *hdrhistogram.Histogram) {
	latency, jitter, arrival = newHist(), newHist(), newHist()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		latency.Merge(s.latency)
		jitter.Merge(s.jitter)
		arrival.Merge(s.arrival)
		s.mu.Unlock()
	}
	return latency, jitter, arrival
}

// latencyP99 returns the p99 of command→frame latency so far, in µs.
func (r *recorder) latencyP99() int64 {
	l, _, _ := r.merged()
	return l.ValueAtQuantile(99)
}

// fold turns every second before `before` into a SeriesPoint and frees its histograms,
// so memory does not grow with the length of the window. A value recorded for a second
// after it was folded (a connection preempted between reading the clock and recording)
// is dropped from the series; it stays in the run's jitter histogram.
func (r *recorder) fold(before int) {
	secs := map[int]*hdrhistogram.Histogram{}
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for sec, h := range s.series {
			if sec >= before {
				continue
			}
			if m := secs[sec]; m == nil {
				secs[sec] = h
			} else {
				m.Merge(h)
			}
			delete(s.series, sec)
		}
		s.mu.Unlock()
	}
	r.pmu.Lock()
	defer r.pmu.Unlock()
	for sec, h := range secs {
		if _, done := r.points[sec]; done {
			continue
		}
		r.points[sec] = SeriesPoint{Second: sec, JitterP99Ms: ms(h.ValueAtQuantile(99)), JitterMaxMs: ms(h.Max()), Frames: h.TotalCount()}
	}
}

// series returns the per-second jitter p99 and max, in milliseconds.
func (r *recorder) series() []SeriesPoint {
	r.fold(math.MaxInt)
	r.pmu.Lock()
	defer r.pmu.Unlock()
	out := make([]SeriesPoint, 0, len(r.points))
	for _, p := range r.points {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b SeriesPoint) int { return a.Second - b.Second })
	return out
}

func ms(us int64) float64 { return float64(us) / 1000 }
