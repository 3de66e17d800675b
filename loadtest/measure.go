package loadtest

import (
	"bytes"
	"context"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// cpuSplit is the process's CPU over a window, split by goroutine label.
type cpuSplit struct {
	// Server, Swarm and Runtime are CPU seconds sampled in goroutines labelled
	// side=server, side=swarm, and neither (GC workers, scheduler, poller).
	Server, Swarm, Runtime float64
}

// serverShare returns the server's CPU with the unlabelled runtime CPU shared out in
// proportion to the labelled CPU: an estimate of what the server alone would cost.
func (c cpuSplit) serverShare() float64 {
	if c.Server+c.Swarm == 0 {
		return 0
	}
	return c.Server + c.Runtime*c.Server/(c.Server+c.Swarm)
}

// labelProfile records a CPU profile of the process to split its CPU by label. It is
// best effort: another profile already running (go test -cpuprofile) means no split.
type labelProfile struct {
	buf  bytes.Buffer
	on   bool
	save string // also write the profile here, if set
}

func startLabelProfile(save string) *labelProfile {
	p := &labelProfile{save: save}
	p.on = pprof.StartCPUProfile(&p.buf) == nil
	return p
}

// stop ends the profile and returns the split; ok is false if there was none.
func (p *labelProfile) stop() (split cpuSplit, ok bool) {
	if !p.on {
		return split, false
	}
	pprof.StopCPUProfile()
	if p.save != "" {
		_ = os.WriteFile(p.save, p.buf.Bytes(), 0o644)
	}
	prof, err := profile.Parse(&p.buf)
	if err != nil {
		return split, false
	}
	idx := -1
	for i, st := range prof.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return split, false
	}
	for _, s := range prof.Sample {
		sec := float64(s.Value[idx]) / 1e9
		switch side := s.Label[labelKey]; {
		case len(side) > 0 && side[0] == labelServer:
			split.Server += sec
		case len(side) > 0 && side[0] == labelSwarm:
			split.Swarm += sec
		default:
			split.Runtime += sec
		}
	}
	return split, true
}

// rssSampler samples a resident-set size every period and keeps the peak.
type rssSampler struct {
	mu   sync.Mutex
	peak int64
	last int64
	stop context.CancelFunc
	done chan struct{}
}

func sampleRSS(period time.Duration, read func() int64) *rssSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &rssSampler{stop: cancel, done: make(chan struct{})}
	s.observe(read())
	go every(ctx, period, s.done, func() { s.observe(read()) })
	return s
}

// every calls fn once a period until ctx ends, then closes done.
func every(ctx context.Context, period time.Duration, done chan<- struct{}, fn func()) {
	defer close(done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

func (s *rssSampler) observe(v int64) {
	if v <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak = max(s.peak, v)
	s.last = v
}

// finish stops sampling and returns the peak and the last sample.
func (s *rssSampler) finish() (peak, last int64) {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.last
}

// counters are the running totals whose growth a window reports: this process's CPU,
// write syscalls and context switches, and this machine's steal per CPU.
type counters struct {
	at               time.Time
	cpu              time.Duration
	writes, switches int64
	steal            []int64
}

// readCounters reads the counters; their instant is taken last.
func readCounters() counters {
	c := counters{cpu: processCPU(), steal: cpuSteal()}
	c.writes, c.switches = processCounts()
	c.at = time.Now()
	return c
}

// close ends w's window, opened when c was read: its start and end, and the growth of
// every counter over it.
func (c counters) close(w *window) {
	end := time.Now()
	now := readCounters()
	w.start, w.end = c.at, end
	w.cpu = now.cpu - c.cpu
	w.writes, w.switches = now.writes-c.writes, now.switches-c.switches
	w.steal = stealPercent(c.steal, now.steal, end.Sub(c.at))
}
