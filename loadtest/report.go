package loadtest

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickrelay/tickrelay/bot"
)

// Report is what one swarm measured. Every duration is in milliseconds or seconds, as
// its name says; sizes in bytes.
type Report struct {
	Target      string  `json:"target"` // "embedded" or the relay's URL
	Sim         string  `json:"sim"`
	Matches     int     `json:"matches"`
	Players     int     `json:"players_per_match"`
	Spectators  int     `json:"spectators_per_match"`
	TickRate    int     `json:"tick_rate"`
	InputDelay  int     `json:"input_delay"`
	CommandRate float64 `json:"command_rate"`
	Idle        bool    `json:"idle,omitempty"`
	Seconds     float64 `json:"seconds"` // the measurement window
	Machine     Machine `json:"machine"`

	Connections struct {
		Players    int `json:"players"`
		Spectators int `json:"spectators"`
		// Transport is Config.Transport; WebTransport counts the connections that used
		// it (the others are on WebSocket: asked to, or fallen back).
		Transport    string `json:"transport"`
		WebTransport int    `json:"webtransport"`
	} `json:"connections"`
	Frames struct {
		Player    int64   `json:"player"`    // frames player connections applied in the window
		Spectator int64   `json:"spectator"` // frames spectators applied (they arrive batched)
		PerSecond float64 `json:"per_second"`
	} `json:"frames"`
	Commands bot.CommandCounts `json:"commands"`
	// Latency is command→frame: from Send to applying the sealed frame holding it.
	Latency Percentiles `json:"latency_ms"`
	// DelayUsed is the range of the input delays the relay last suggested to the players
	// (the adaptive delay they ended with), in ticks.
	DelayUsed struct {
		Min int `json:"min"`
		Max int `json:"max"`
	} `json:"input_delay_used"`
	// Prediction is what predicting bots (Config.Predict) saw: their own commands in the
	// head (Perceived, against Latency, the confirmed), and their rollbacks.
	Prediction *PredictionReport `json:"prediction,omitempty"`
	// LatencyBudgetMs is (input delay + 1) ticks + 5 ms, the target for Latency.P99.
	LatencyBudgetMs float64 `json:"latency_budget_ms"`
	// Jitter is |interval between consecutive frames − 1/tick rate|, per player connection,
	// timed as each bot handles the frame (after its own decode and sim step).
	Jitter Percentiles `json:"frame_jitter_ms"`
	// Arrival is the same jitter from the kernel's receive times of the frames (Linux):
	// the relay's delivery timing, without the bots' scheduling. Nil where not measured.
	Arrival *Percentiles `json:"frame_arrival_jitter_ms,omitempty"`
	// Lateness is how late each frame reached its player against that connection's
	// best arrival (arrival − tick·period, least of the connection's): what a stall, a
	// lost segment's retransmission or a slow sender costs every frame it held.
	Lateness Percentiles `json:"frame_lateness_ms"`
	// Hitches are the stalls a player perceives: runs of frames more than HitchTicks
	// late.
	Hitches HitchReport `json:"hitches"`
	// Network is the emulated network between the bots and the relay, if any.
	Network *NetworkReport `json:"network,omitempty"`
	// TCP is what the sockets took of the run's TCP options (the embedded relay's and
	// the bots'; a relay given by URL has its own).
	TCP TCPReport `json:"tcp"`
	// Desyncs counts desync verdicts the players received; StateMismatches matches whose
	// connections ended on the same tick with different hashes.
	Desyncs         int64 `json:"desyncs"`
	StateMismatches int   `json:"state_mismatches"`
	// Dropped counts connections that ended with an error or without the match's End;
	// SpectatorsBehind spectators that ended on an earlier tick than their players.
	// Reconnects counts connections that dropped and reconnected on their own (the
	// client's automatic reconnect): not dropped, but a soak fails on them.
	Dropped struct {
		Players          int      `json:"players"`
		Spectators       int      `json:"spectators"`
		SpectatorsBehind int      `json:"spectators_behind"`
		Reconnects       int64    `json:"reconnects"`
		Reasons          []string `json:"reasons,omitempty"`
	} `json:"dropped"`
	CPU    CPUReport    `json:"cpu"`
	Memory MemoryReport `json:"memory"`
	Relay  RelayCounts  `json:"relay"`
	// BytesPerConnSecond is stream bytes received per connection per second.
	BytesPerConnSecond float64 `json:"bytes_per_connection_per_second"`
	// Series is frame jitter by second of the window.
	Series []SeriesPoint `json:"series,omitempty"`
	// LatencyHist is the command→frame latency distribution (for plots).
	LatencyHist []Bucket `json:"latency_histogram,omitempty"`
	// Soak holds the goroutine, heap and RSS samples of a soak (Config.SampleEvery).
	Soak *SoakReport `json:"soak,omitempty"`
	// Verdict is whether the run passed (Judge at JitterThresholdMs).
	Verdict           Verdict `json:"verdict"`
	JitterThresholdMs float64 `json:"jitter_threshold_ms"`
	// HitchThreshold is the bar on Hitches.PerPlayerMinute (0: none).
	HitchThreshold float64 `json:"hitch_threshold_per_player_minute,omitempty"`

	latency, jitter *hdrhistogram.Histogram
}

// HitchReport counts perceived hitches: a hitch is a run of consecutive frames each
// more than Ticks ticks late (Report.Lateness).
type HitchReport struct {
	Ticks           int     `json:"late_ticks"`
	Count           int64   `json:"count"`
	LateFrames      int64   `json:"late_frames"`
	PlayerMinutes   float64 `json:"player_minutes"`
	PerPlayerMinute float64 `json:"per_player_minute"`
}

// PredictionReport is the predicting bots' figures: Perceived is from Send to the command
// showing in the bot's head (the window); the rollback figures are over the bots' lives.
type PredictionReport struct {
	Perceived          Percentiles `json:"perceived_ms"`
	Rollbacks          int64       `json:"rollbacks"`
	RollbacksPerSecond float64     `json:"rollbacks_per_second"` // per bot
	DepthP50           int         `json:"depth_p50"`
	DepthP99           int         `json:"depth_p99"`
	// DepthHist counts the rollbacks by depth: DepthHist[d] rolled back d ticks.
	DepthHist            []int64 `json:"depth_histogram,omitempty"`
	Resimulated          int64   `json:"resimulated_ticks"`
	ResimulatedPerSecond float64 `json:"resimulated_ticks_per_second"` // per bot
	// SnapshotRestoreUs is the mean time a rollback's snapshot and restore took.
	SnapshotRestoreUs float64 `json:"snapshot_restore_us"`
}

// Machine describes where the swarm ran.
type Machine struct {
	CPUs   int    `json:"cpus"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	GoVers string `json:"go"`
}

// Percentiles of a histogram, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// DeliveryJitter is the frame jitter that says how steadily the relay delivered: at
// arrival where it was measured for (nearly) every interval the bots timed (the kernel's
// receive times, free of the bots' own work and of a busy swarm's queueing below a
// period), else as the bots handled the frames; where names which ("at arrival", "at
// the bots").
func (r *Report) DeliveryJitter() (p Percentiles, where string) {
	if r.judgedAtArrival() {
		return *r.Arrival, "at arrival"
	}
	return r.Jitter, "at the bots"
}

// judgedAtArrival says whether DeliveryJitter is the arrival jitter: measured, and for at
// least 9 in 10 of the intervals the bots timed (a connection that lost its stamps must
// not leave the rule a few well-timed samples).
func (r *Report) judgedAtArrival() bool {
	return r.Arrival != nil && r.Arrival.Count*10 >= r.Jitter.Count*9
}

// arrivalPercentiles is percentiles(h), or nil if h is empty (no receive stamps).
func arrivalPercentiles(h *hdrhistogram.Histogram) *Percentiles {
	if h.TotalCount() == 0 {
		return nil
	}
	p := percentiles(h)
	return &p
}

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	return Percentiles{
		Count: h.TotalCount(), P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)),
		P99: ms(h.ValueAtQuantile(99)), P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max()),
	}
}

// CPUReport is CPU time over the window. The embedded relay shares the process with the
// swarm: ProcessSeconds is both; a CPU profile labelled by side splits it (Labelled).
type CPUReport struct {
	ProcessSeconds float64 `json:"process_seconds"`
	Labelled       bool    `json:"labelled"`
	ServerSeconds  float64 `json:"server_seconds"`  // goroutines of the relay (or floor server)
	SwarmSeconds   float64 `json:"swarm_seconds"`   // goroutines of the bots and spectators
	RuntimeSeconds float64 `json:"runtime_seconds"` // neither: GC workers, scheduler, poller
	// RelaySeconds is the server's CPU: labelled plus its share of the runtime's
	// (embedded), or process_cpu_seconds_total from its /metrics (remote).
	RelaySeconds float64 `json:"relay_seconds"`
	RelaySource  string  `json:"relay_source"`
	// Per delivered frame (one tick to one connection), in microseconds.
	RelayUsPerFrame   float64 `json:"relay_us_per_frame"`
	ProcessUsPerFrame float64 `json:"process_us_per_frame"`
	// SwarmProcsSeconds is the CPU of the swarm's child processes (Config.Procs).
	SwarmProcsSeconds float64 `json:"swarm_procs_seconds,omitempty"`
	// Per delivered frame, of the whole process: write syscalls (Linux) and context
	// switches. With the server alone in its process (Config.Procs) they are the
	// server's: deterministic where CPU time is not on a busy machine.
	WritesPerFrame   float64 `json:"write_syscalls_per_frame,omitempty"`
	SwitchesPerFrame float64 `json:"context_switches_per_frame,omitempty"`
	// StealPercent is, per CPU of this machine (by number), the share of the window the
	// hypervisor ran something else while that CPU had work (Linux /proc/stat; a relay
	// given by URL may run elsewhere): on a virtual machine, a run's jitter tail is the
	// host's as much as the server's when this is high.
	StealPercent []float64 `json:"steal_percent_by_cpu,omitempty"`
}

// MemoryReport is resident memory. Per-connection and per-match figures are the growth
// over the baseline taken before the swarm connected, at the end of the window.
type MemoryReport struct {
	ProcessBaseline int64   `json:"process_baseline_rss"`
	ProcessPeak     int64   `json:"process_peak_rss"`
	RelayBaseline   int64   `json:"relay_baseline_rss,omitempty"`
	RelayPeak       int64   `json:"relay_peak_rss,omitempty"`
	PerConnection   float64 `json:"per_connection"`
	PerMatch        float64 `json:"per_match"`
	Source          string  `json:"source"`
}

// RelayCounts are the relay's own counters over the window, from its /metrics.
type RelayCounts struct {
	FramesSent     int64   `json:"frames_sent"`
	SlowDrops      int64   `json:"slow_connections_dropped"`
	Desyncs        int64   `json:"desyncs"`
	TickLatenessMs float64 `json:"tick_lateness_p99_ms"` // bucket upper bound
	// TickLatenessOver says the p99 lies past the histogram's last bucket:
	// TickLatenessMs is then that bucket's bound, a lower bound of the p99.
	TickLatenessOver bool `json:"tick_lateness_p99_over,omitempty"`
	// TicksLate counts ticks sealed later than the relay's --max-tick-lateness: the
	// relay fell behind its clock (and refused new matches meanwhile).
	TicksLate int64 `json:"ticks_late"`
}

// SeriesPoint is one second of the window.
type SeriesPoint struct {
	Second      int     `json:"s"`
	JitterP99Ms float64 `json:"jitter_p99_ms"`
	JitterMaxMs float64 `json:"jitter_max_ms"`
	Frames      int64   `json:"frames"`
}

// Bucket is one bar of a distribution, in milliseconds.
type Bucket struct {
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"`
	Count  int64   `json:"count"`
}

func thisMachine() Machine {
	return Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVers: runtime.Version()}
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) {
	p := printer(func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) })
	p("swarm     %d matches × (%d players + %d spectators), %s sim, %d Hz, %.1f commands/s per player, %s relay",
		r.Matches, r.Players, r.Spectators, r.Sim, r.TickRate, r.CommandRate, r.Target)
	p("machine   %d CPUs, %s/%s, %s; window %.1f s", r.Machine.CPUs, r.Machine.OS, r.Machine.Arch, r.Machine.GoVers, r.Seconds)
	p("conns     %d players, %d spectators; transport %s, %d on WebTransport", r.Connections.Players, r.Connections.Spectators, r.Connections.Transport, r.Connections.WebTransport)
	p("frames    %d to players, %d to spectators, %.0f/s", r.Frames.Player, r.Frames.Spectator, r.Frames.PerSecond)
	p("commands  %d sent, %d acked, %d placed late, %d rejected", r.Commands.Sent, r.Commands.Acked, r.Commands.Late, r.Commands.Rejected)
	p("latency   %s; budget (delay %d + 1 ticks + 5 ms) %.1f ms", percentilesText(r.Latency), r.InputDelay, r.LatencyBudgetMs)
	p("          players' input delay at the end: %d..%d ticks", r.DelayUsed.Min, r.DelayUsed.Max)
	if pr := r.Prediction; pr != nil {
		p("predicted own commands shown in the head %s", percentilesText(pr.Perceived))
		p("          %d rollbacks (%.1f/s a bot), depth p50 %d p99 %d ticks; %d ticks re-simulated (%.1f/s a bot); snapshot+restore %.1f µs a rollback",
			pr.Rollbacks, pr.RollbacksPerSecond, pr.DepthP50, pr.DepthP99, pr.Resimulated, pr.ResimulatedPerSecond, pr.SnapshotRestoreUs)
	}
	judged := func(at bool) string {
		if at == r.judgedAtArrival() {
			return "  (judged)"
		}
		return ""
	}
	p("jitter    %s%s", percentilesText(r.Jitter), judged(false))
	if r.Arrival != nil {
		p("  arrival %s%s", percentilesText(*r.Arrival), judged(true))
	}
	p("lateness  %s", percentilesText(r.Lateness))
	h := r.Hitches
	p("hitches   %d (%.2f per player-minute; frames > %d ticks late: %d)", h.Count, h.PerPlayerMinute, h.Ticks, h.LateFrames)
	if r.Network != nil {
		r.Network.writeText(p)
	}
	p("tcp       asked %s; took %s", r.TCP.Asked, r.TCP.Applied)
	p("desyncs   %d; final-state mismatches %d", r.Desyncs, r.StateMismatches)
	p("dropped   %d players, %d spectators, %d spectators behind, %d reconnects; relay slow-drops %d", r.Dropped.Players, r.Dropped.Spectators, r.Dropped.SpectatorsBehind, r.Dropped.Reconnects, r.Relay.SlowDrops)
	for _, s := range r.Dropped.Reasons {
		p("          %s", s)
	}
	r.writeResources(p)
	p("relay     %d frames sent, tick lateness p99 ≤ %.1f ms, %d desyncs", r.Relay.FramesSent, r.Relay.TickLatenessMs, r.Relay.Desyncs)
	if r.Relay.TicksLate > 0 || r.Relay.TickLatenessOver {
		over := ""
		if r.Relay.TickLatenessOver {
			over = fmt.Sprintf(", tick lateness p99 above %.0f ms (past the histogram)", r.Relay.TickLatenessMs)
		}
		p("BEHIND    the relay fell behind its clock: %d ticks sealed late%s", r.Relay.TicksLate, over)
	}
	p("traffic   %.0f stream bytes per connection per second", r.BytesPerConnSecond)
	if r.Soak != nil {
		r.Soak.WriteText(w)
	}
	p("verdict   %s (jitter threshold %.1f ms, hitches %.2f per player-minute)", r.Verdict, r.JitterThresholdMs, r.HitchThreshold)
}

// printer writes one line of a text report.
type printer func(format string, a ...any)

// percentilesText is a distribution on one line.
func percentilesText(x Percentiles) string {
	return fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f ms (n=%d)", x.P50, x.P90, x.P99, x.P999, x.Max, x.Count)
}

// writeText writes the emulated network's lines of the report.
func (n *NetworkReport) writeText(p printer) {
	p("network   %s emulator: %s", n.Emulator, n.Applied)
	if n.ForwardedPackets > 0 || n.QueueDrops > 0 {
		p("          forwarded %d packets, %d dropped by full queues (forwarder: %s)", n.ForwardedPackets, n.QueueDrops, n.Forwarder)
		if l := n.ForwarderLag; l != nil {
			p("          forwarder late against the delay asked: max %s, %d packets > 1 ms, %d > 5 ms", l.Max.Round(time.Microsecond), l.Over1ms, l.Over5ms)
		}
	}
	if t := n.TCP; t != nil {
		p("          tcp on the link: %d segments, %d retransmitted (%.2f%%): %d fast, %d by timeout, %d loss probes; %d spurious timeouts, %d duplicates seen by peers",
			t.OutSegs, t.RetransSegs, 100*float64(t.RetransSegs)/max(float64(t.OutSegs), 1), t.FastRetrans, t.Timeouts, t.LossProbes, t.SpuriousRTOs, t.DSACKRecv)
	}
	if n.Note != "" {
		p("          not the packet level: %s", n.Note)
	}
}

// writeResources writes the report's CPU and memory lines.
func (r *Report) writeResources(p printer) {
	c := r.CPU
	p("cpu       process %.2f s (%.0f%% of one core); relay %.2f s [%s]", c.ProcessSeconds, 100*c.ProcessSeconds/max(r.Seconds, 1e-9), c.RelaySeconds, c.RelaySource)
	if c.Labelled {
		p("          by label: server %.2f s, swarm %.2f s, runtime %.2f s", c.ServerSeconds, c.SwarmSeconds, c.RuntimeSeconds)
	}
	p("          per delivered frame: relay %.1f µs, process %.1f µs; process %.2f write syscalls, %.3f context switches", c.RelayUsPerFrame, c.ProcessUsPerFrame, c.WritesPerFrame, c.SwitchesPerFrame)
	if len(c.StealPercent) > 0 {
		p("          %s", stealLine(c.StealPercent))
	}
	m := r.Memory
	p("memory    process rss %s → peak %s", mib(m.ProcessBaseline), mib(m.ProcessPeak))
	if m.RelayPeak > 0 {
		p("          relay rss %s → peak %s", mib(m.RelayBaseline), mib(m.RelayPeak))
	}
	p("          growth %.1f KiB per connection, %.1f KiB per match [%s]", m.PerConnection/1024, m.PerMatch/1024, m.Source)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// latencyBuckets turns a histogram into at most ~60 bars.
func latencyBuckets(h *hdrhistogram.Histogram) []Bucket {
	if h.TotalCount() == 0 {
		return nil
	}
	lo, hi := h.Min(), h.ValueAtQuantile(99.9)
	width := max((hi-lo)/60, 1)
	var out []Bucket
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		from := lo + (min(b.From, hi)-lo)/width*width
		if n := len(out); n > 0 && out[n-1].FromMs == ms(from) {
			out[n-1].Count += b.Count
			continue
		}
		out = append(out, Bucket{FromMs: ms(from), ToMs: ms(from + width), Count: b.Count})
	}
	return out
}

// promQuantile estimates quantile q of a Prometheus histogram from the change of its
// buckets between two scrapes: the upper bound of the first bucket that holds q. When
// that is the +Inf bucket, it returns the last finite bound and over (JSON has no +Inf,
// and an overloaded run must still be written whole).
func promQuantile(m0, m1 promSeries, name string, q float64) (v float64, over bool) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := name + `_bucket{le="`
	for k, v := range m1 {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(k[len(prefix):], `"}`), 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{le, v - m0[k]})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return 0, false
	}
	total := bs[len(bs)-1].n
	i := slices.IndexFunc(bs, func(b bucket) bool { return b.n >= q*total })
	if math.IsInf(bs[i].le, 1) {
		if i == 0 {
			return 0, true
		}
		return bs[i-1].le, true
	}
	return bs[i].le, false
}
