package loadtest

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
)

// maxReasons bounds the drop reasons a report lists.
const maxReasons = 5

// report turns the window and every connection's stats into a Report.
func (sw *swarm) report(base baseline, w window, stats []connStats) *Report {
	r := sw.newReport(w)
	bytes := r.countConnections(sw, stats, sw.matchEnds(stats))
	secs := max(r.Seconds, 1e-9)
	delivered := r.Frames.Player + r.Frames.Spectator
	r.Frames.PerSecond = float64(delivered) / secs
	if n := len(stats); n > 0 {
		r.BytesPerConnSecond = float64(bytes) / float64(n) / secs
	}
	r.addHistograms(sw, stats)
	r.addHitches(sw, stats)
	r.Network = sw.net.report(sw.cfg)
	r.TCP = tcpReport(sw.cfg.TCP)
	r.Soak = w.soak
	r.addCPUAndMemory(sw, base, w, len(stats), delivered)
	r.addRelayCounts(w)
	return r
}

// newReport is the run's shape: its config, the match options the relay chose, the window.
func (sw *swarm) newReport(w window) *Report {
	cfg := sw.cfg
	r := &Report{
		Target: "embedded", Sim: cfg.Sim, Matches: cfg.Matches, Players: cfg.Players, Spectators: cfg.Spectators,
		TickRate: cfg.TickRate, CommandRate: cfg.CommandRate, Idle: cfg.Idle,
		Seconds: w.end.Sub(w.start).Seconds(), Machine: thisMachine(),
	}
	r.Connections.Transport = cfg.transport().String()
	if !sw.tgt.embedded {
		r.Target = sw.tgt.wsURL
	}
	if len(sw.matches) > 0 && sw.matches[0] != nil {
		r.InputDelay = sw.matches[0].Options.InputDelay
		r.TickRate = sw.matches[0].Options.TickRate
	}
	r.LatencyBudgetMs = float64(r.InputDelay+1)*1000/float64(max(r.TickRate, 1)) + 5
	return r
}

// matchEnd is the furthest tick any connection of a match reached, and the hashes there.
type matchEnd struct {
	last   uint64
	hashes map[uint64]bool
}

func (sw *swarm) matchEnds(stats []connStats) []matchEnd {
	ends := make([]matchEnd, sw.cfg.Matches)
	for i, st := range stats {
		c := sw.conns[i]
		if st.HasTick && st.LastTick >= ends[c.match].last {
			if st.LastTick > ends[c.match].last || ends[c.match].hashes == nil {
				ends[c.match] = matchEnd{last: st.LastTick, hashes: map[uint64]bool{}}
			}
			ends[c.match].hashes[st.FinalHash] = true
		}
	}
	return ends
}

// countConnections sums the connections' frames, commands, desyncs and drops (with the
// first few reasons), the delays the relay suggested, and the matches whose connections
// ended on different hashes; it returns the stream bytes received.
func (r *Report) countConnections(sw *swarm, stats []connStats, ends []matchEnd) (bytes int64) {
	seen := map[string]bool{}
	for i, st := range stats {
		c := sw.conns[i]
		bytes += st.Bytes
		r.Dropped.Reconnects += st.Reconnects
		if st.WebTransport {
			r.Connections.WebTransport++
		}
		dropped := st.Err != nil || !st.Ended || st.EndReason == pb.End_REASON_RECORDING_FAILED
		if c.player > 0 {
			if d := int(st.Delay); r.Connections.Players == 0 {
				r.DelayUsed.Min, r.DelayUsed.Max = d, d
			} else {
				r.DelayUsed.Min, r.DelayUsed.Max = min(r.DelayUsed.Min, d), max(r.DelayUsed.Max, d)
			}
			r.Connections.Players++
			r.Frames.Player += st.Frames
			r.Commands.Add(st.CommandCounts)
			r.Desyncs += st.Desyncs
			if dropped {
				r.Dropped.Players++
			}
		} else {
			r.Connections.Spectators++
			r.Frames.Spectator += st.Frames
			if dropped {
				r.Dropped.Spectators++
			} else if !sw.cfg.Idle && (!st.HasTick || st.LastTick < ends[c.match].last) {
				r.Dropped.SpectatorsBehind++
			}
		}
		if dropped {
			why := "ended without the match's End record"
			if st.Err != nil {
				why = st.Err.Error()
			} else if st.Ended {
				why = "match ended: " + st.EndReason.String()
			}
			if !seen[why] && len(r.Dropped.Reasons) < maxReasons {
				seen[why] = true
				r.Dropped.Reasons = append(r.Dropped.Reasons, fmt.Sprintf("%s: %s", c.role(), why))
			}
		}
	}
	for _, e := range ends {
		if len(e.hashes) > 1 {
			r.StateMismatches++
		}
	}
	return bytes
}

// addHistograms adds the latency, jitter (and arrival) and, with prediction, perceived
// figures, the per-second series and the latency histogram for the plot.
func (r *Report) addHistograms(sw *swarm, stats []connStats) {
	var arrival *hdrhistogram.Histogram
	r.latency, r.jitter, arrival = sw.rec.merged()
	r.Latency, r.Jitter = percentiles(r.latency), percentiles(r.jitter)
	r.Lateness = percentiles(sw.rec.latenessMerged())
	if sw.net.rep == nil {
		// Through an emulated network the stamps would time the emulator (the proxy or
		// the forwarder, on the swarm's CPU; the loss), not the relay.
		r.Arrival = arrivalPercentiles(arrival)
	}
	if sw.cfg.Predict {
		r.Prediction = predictionReport(stats, percentiles(sw.rec.perceivedMerged()), float64(sw.cfg.TickRate))
	}
	r.Series = sw.rec.series()
	r.LatencyHist = latencyBuckets(r.latency)
}

// addHitches counts the players' perceived hitches over the window.
func (r *Report) addHitches(sw *swarm, stats []connStats) {
	h := HitchReport{Ticks: HitchTicks, PlayerMinutes: float64(r.Connections.Players) * r.Seconds / 60}
	for _, st := range stats {
		h.Count += st.Hitches
		h.LateFrames += st.LateFrames
	}
	if h.PlayerMinutes > 0 {
		h.PerPlayerMinute = float64(h.Count) / h.PlayerMinutes
	}
	r.Hitches = h
}

// tcpReport is what this kernel takes of o.
func tcpReport(o tcptune.Options) TCPReport {
	asked := fmt.Sprintf("rto_min %s, delack_max %s, thin linear timeouts %t", o.RTOMin, o.DelackMax, !o.NoThinLinear)
	if o == (tcptune.Options{}) {
		asked = "the defaults"
	} else if o == tcptune.Kernel {
		asked = "the kernel's"
	}
	a, err := tcptune.Probe(o)
	if err != nil {
		a.Refused = append(a.Refused, err.Error())
	}
	return TCPReport{Asked: asked, Applied: a}
}

// addCPUAndMemory adds the window's CPU and memory, the relay's alone where the bots ran
// in swarm processes.
func (r *Report) addCPUAndMemory(sw *swarm, base baseline, w window, conns int, delivered int64) {
	r.CPU = cpuReport(w, sw.tgt.embedded, delivered)
	if sw.procs != nil {
		r.CPU.SwarmProcsSeconds = sw.procCPU
		if sw.tgt.embedded {
			// The bots are in other processes: this process is the relay alone.
			r.CPU.RelaySeconds, r.CPU.RelayUsPerFrame = r.CPU.ProcessSeconds, r.CPU.ProcessUsPerFrame
			r.CPU.RelaySource = "this process: the relay alone (bots in swarm processes)"
		}
	}
	r.Memory = memoryReport(base, w, sw.tgt.embedded, conns, sw.cfg.Matches)
	if sw.procs != nil && sw.tgt.embedded {
		r.Memory.Source = "process rss: the relay alone (bots in swarm processes)"
	}
}

// addRelayCounts adds what the relay's metrics counted over the window, where they were
// scraped at both ends.
func (r *Report) addRelayCounts(w window) {
	if w.metrics0 == nil || w.metrics1 == nil {
		return
	}
	d := func(name string) int64 {
		a, _ := w.metrics0.get(name)
		b, _ := w.metrics1.get(name)
		return int64(b - a)
	}
	r.Relay = RelayCounts{
		FramesSent: d(relay.MetricFramesSent), SlowDrops: d(relay.MetricSlowDrops),
		Desyncs: d(relay.MetricDesyncs), TicksLate: d(relay.MetricTicksLate),
	}
	late, over := promQuantile(w.metrics0, w.metrics1, relay.MetricTickLateness, 0.99)
	r.Relay.TickLatenessMs, r.Relay.TickLatenessOver = 1000*late, over
}

func cpuReport(w window, embedded bool, delivered int64) CPUReport {
	c := CPUReport{ProcessSeconds: w.cpu.Seconds(), Labelled: w.splitOK, StealPercent: w.steal}
	if w.splitOK {
		c.ServerSeconds, c.SwarmSeconds, c.RuntimeSeconds = w.split.Server, w.split.Swarm, w.split.Runtime
	}
	switch {
	case !embedded && w.relayCPUOK:
		c.RelaySeconds, c.RelaySource = w.relayCPU, "relay process, from its /metrics"
	case !embedded:
		c.RelaySource = "unknown: pass --admin for the relay's /metrics"
	case w.splitOK:
		c.RelaySeconds = w.split.serverShare()
		c.RelaySource = "in process: relay goroutines' profile samples + their share of GC/runtime"
	default:
		c.RelaySeconds = c.ProcessSeconds
		c.RelaySource = "in process, no profile: the whole process, bots included"
	}
	if delivered > 0 {
		c.RelayUsPerFrame = c.RelaySeconds * 1e6 / float64(delivered)
		c.ProcessUsPerFrame = c.ProcessSeconds * 1e6 / float64(delivered)
		c.WritesPerFrame = float64(w.writes) / float64(delivered)
		c.SwitchesPerFrame = float64(w.switches) / float64(delivered)
	}
	return c
}

func memoryReport(base baseline, w window, embedded bool, conns, matches int) MemoryReport {
	m := MemoryReport{
		ProcessBaseline: base.processRSS, ProcessPeak: w.processPeak,
		RelayBaseline: base.relayRSS, RelayPeak: w.relayPeak,
	}
	grow := w.procLast - base.processRSS
	m.Source = "process rss: relay and bots together"
	if !embedded {
		grow = w.relayLast - base.relayRSS
		m.Source = "relay process rss, from its /metrics"
		if w.relayLast == 0 {
			grow, m.Source = 0, "unknown: pass --admin for the relay's /metrics"
		}
	}
	if conns > 0 {
		m.PerConnection = float64(grow) / float64(conns)
	}
	if matches > 0 {
		m.PerMatch = float64(grow) / float64(matches)
	}
	return m
}

// predictionReport sums the predicting bots' heads.
func predictionReport(stats []connStats, perceived Percentiles, rate float64) *PredictionReport {
	pr := &PredictionReport{Perceived: perceived}
	var depths []int64 // rollbacks by depth, all bots
	var botSeconds, snapRestore float64
	for _, st := range stats {
		h := st.Head
		if h == nil {
			continue
		}
		pr.Rollbacks += h.Rollbacks
		pr.Resimulated += h.Resimulated
		depths = lockstep.AddDepths(depths, h.Depths)
		snapRestore += float64((h.Snapshot + h.Restore).Microseconds())
		if st.HasTick {
			botSeconds += float64(st.LastTick+1) / max(rate, 1)
		}
	}
	if pr.Rollbacks > 0 {
		st := lockstep.HeadStats{Depths: depths}
		pr.DepthP50, pr.DepthP99, pr.DepthHist = st.DepthAt(0.5), st.DepthAt(0.99), depths
	}
	if botSeconds > 0 {
		pr.RollbacksPerSecond = float64(pr.Rollbacks) / botSeconds
		pr.ResimulatedPerSecond = float64(pr.Resimulated) / botSeconds
	}
	if pr.Rollbacks > 0 {
		pr.SnapshotRestoreUs = snapRestore / float64(pr.Rollbacks)
	}
	return pr
}
