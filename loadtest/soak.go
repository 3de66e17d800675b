package loadtest

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/tickrelay/tickrelay/relay"
)

// DefaultSoakSample: a soak samples goroutines, heap and RSS every minute.
const DefaultSoakSample = time.Minute

// SoakReport is what a soak (Config.SampleEvery > 0) sampled over its window: the
// goroutine count, heap in use and RSS of this process and, with a relay in its own
// process (Config.AdminURL), of the relay, at the start, every SampleEvery and at the end,
// each series with its least-squares slope per hour. A flat series has a slope near 0.
type SoakReport struct {
	EverySeconds float64 `json:"every_seconds"`
	// Samples are in time order; the first is taken as the window opens, the last as it
	// closes.
	Samples []SoakSample `json:"samples"`
	Series  []SoakSeries `json:"series"`
}

// SoakSample is one sample. Process fields are this process (with an embedded relay:
// relay and bots together); Relay fields a relay in its own process, from its /metrics
// (go_goroutines, go_memstats_heap_inuse_bytes, process_resident_memory_bytes), zero
// when there is none.
type SoakSample struct {
	Seconds           float64 `json:"seconds"` // since the window opened
	Goroutines        int64   `json:"goroutines"`
	HeapInuse         int64   `json:"heap_inuse"`
	RSS               int64   `json:"rss"`
	RelayGoroutines   int64   `json:"relay_goroutines,omitempty"`
	RelayHeapInuse    int64   `json:"relay_heap_inuse,omitempty"`
	RelayRSS          int64   `json:"relay_rss,omitempty"`
	RelayScrapeFailed bool    `json:"relay_scrape_failed,omitempty"`
}

// SoakSeries summarises one sampled quantity.
type SoakSeries struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"` // "goroutines" or "bytes"
	First float64 `json:"first"`
	Last  float64 `json:"last"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	// SlopePerHour is the least-squares slope over every sample, in units per hour;
	// SlopePerHourLastHalf the same over the samples of the window's second half (past
	// start-up transients such as the heap growing to its GC target).
	SlopePerHour         float64 `json:"slope_per_hour"`
	SlopePerHourLastHalf float64 `json:"slope_per_hour_last_half"`
}

// soakSampler samples every period until finish.
type soakSampler struct {
	t0      time.Time
	read    func(ctx context.Context, at time.Duration) SoakSample
	mu      sync.Mutex
	samples []SoakSample
	stop    context.CancelFunc
	done    chan struct{}
}

func startSoak(period time.Duration, read func(ctx context.Context, at time.Duration) SoakSample) *soakSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &soakSampler{t0: time.Now(), read: read, stop: cancel, done: make(chan struct{})}
	s.take(ctx)
	go every(ctx, period, s.done, func() { s.take(ctx) })
	return s
}

func (s *soakSampler) take(ctx context.Context) {
	at := time.Since(s.t0)
	smp := s.read(ctx, at)
	smp.Seconds = at.Seconds()
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// finish takes the last sample and returns the report.
func (s *soakSampler) finish(period time.Duration) *SoakReport {
	s.stop()
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.take(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return newSoakReport(period, s.samples)
}

// readSoak samples this process and, if the target is a relay in its own process with an
// admin address, the relay.
func (sw *swarm) readSoak(ctx context.Context, _ time.Duration) SoakSample {
	var mst runtime.MemStats
	runtime.ReadMemStats(&mst)
	smp := SoakSample{Goroutines: int64(runtime.NumGoroutine()), HeapInuse: int64(mst.HeapInuse), RSS: processRSS()}
	if sw.tgt.embedded || sw.tgt.adminBase == "" {
		return smp
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := sw.tgt.metrics(sctx)
	g, ok1 := m.get(relay.MetricGoroutines)
	h, ok2 := m.get(relay.MetricHeapInuse)
	r, ok3 := m.get(relay.MetricProcessRSS)
	if err != nil || !ok1 || !ok2 || !ok3 {
		smp.RelayScrapeFailed = true
		return smp
	}
	smp.RelayGoroutines, smp.RelayHeapInuse, smp.RelayRSS = int64(g), int64(h), int64(r)
	return smp
}

func newSoakReport(period time.Duration, samples []SoakSample) *SoakReport {
	r := &SoakReport{EverySeconds: period.Seconds(), Samples: samples}
	type q struct {
		name, unit string
		get        func(SoakSample) int64
		relay      bool
	}
	qs := []q{
		{"process goroutines", "goroutines", func(s SoakSample) int64 { return s.Goroutines }, false},
		{"process heap in use", "bytes", func(s SoakSample) int64 { return s.HeapInuse }, false},
		{"process rss", "bytes", func(s SoakSample) int64 { return s.RSS }, false},
		{"relay goroutines", "goroutines", func(s SoakSample) int64 { return s.RelayGoroutines }, true},
		{"relay heap in use", "bytes", func(s SoakSample) int64 { return s.RelayHeapInuse }, true},
		{"relay rss", "bytes", func(s SoakSample) int64 { return s.RelayRSS }, true},
	}
	for _, q := range qs {
		var xs, ys []float64
		for _, s := range samples {
			if q.relay && s.RelayScrapeFailed {
				continue
			}
			if v := q.get(s); v > 0 || !q.relay {
				xs = append(xs, s.Seconds/3600)
				ys = append(ys, float64(v))
			}
		}
		if len(ys) == 0 {
			continue
		}
		ser := SoakSeries{Name: q.name, Unit: q.unit, First: ys[0], Last: ys[len(ys)-1], Min: ys[0], Max: ys[0]}
		for _, y := range ys {
			ser.Min, ser.Max = min(ser.Min, y), max(ser.Max, y)
		}
		ser.SlopePerHour = slope(xs, ys)
		half := xs[len(xs)-1] / 2
		i := 0
		for i < len(xs) && xs[i] < half {
			i++
		}
		ser.SlopePerHourLastHalf = slope(xs[i:], ys[i:])
		r.Series = append(r.Series, ser)
	}
	return r
}

// slope is the least-squares slope of ys over xs (0 with fewer than two distinct xs).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// WriteText writes the soak's samples and slopes for people.
func (r *SoakReport) WriteText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	relay := false
	for _, s := range r.Samples {
		relay = relay || s.RelayRSS > 0
	}
	p("soak      %d samples, every %s (plus window start and end)", len(r.Samples), time.Duration(r.EverySeconds*float64(time.Second)))
	head := "          %8s  %10s  %12s  %12s"
	args := []any{"t", "goroutines", "heap in use", "rss"}
	if relay {
		head += "  %16s  %17s  %12s"
		args = append(args, "relay goroutines", "relay heap in use", "relay rss")
	}
	p(head, args...)
	for _, s := range r.Samples {
		line := fmt.Sprintf("          %8s  %10d  %12s  %12s", time.Duration(s.Seconds*float64(time.Second)).Round(time.Second), s.Goroutines, mib(s.HeapInuse), mib(s.RSS))
		if relay {
			if s.RelayScrapeFailed {
				line += "  (relay /metrics scrape failed)"
			} else {
				line += fmt.Sprintf("  %16d  %17s  %12s", s.RelayGoroutines, mib(s.RelayHeapInuse), mib(s.RelayRSS))
			}
		}
		p("%s", line)
	}
	for _, s := range r.Series {
		if s.Unit == "bytes" {
			p("          %-20s %s → %s (min %s, max %s); slope %s/h, last half %s/h", s.Name, mib(int64(s.First)), mib(int64(s.Last)), mib(int64(s.Min)), mib(int64(s.Max)), signedMiB(s.SlopePerHour), signedMiB(s.SlopePerHourLastHalf))
		} else {
			p("          %-20s %.0f → %.0f (min %.0f, max %.0f); slope %+.1f/h, last half %+.1f/h", s.Name, s.First, s.Last, s.Min, s.Max, s.SlopePerHour, s.SlopePerHourLastHalf)
		}
	}
}

func signedMiB(b float64) string { return fmt.Sprintf("%+.1f MiB", b/(1<<20)) }
