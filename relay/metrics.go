package relay

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tickrelay/tickrelay/lockstep"
)

// Names of the relay's metric series that other packages read by name (the load test's
// report scrapes them from /metrics): defined once, here. A test holds every one of them
// to a series the relay exposes.
const (
	MetricFramesSent   = "tickrelay_frames_sent_total"
	MetricSlowDrops    = "tickrelay_slow_connections_dropped_total"
	MetricDesyncs      = "tickrelay_desyncs_total"
	MetricTickLateness = "tickrelay_tick_lateness_seconds"
	MetricTicksLate    = "tickrelay_ticks_late_total"
	// The Go and process collectors' series the relay registers.
	MetricProcessCPU = "process_cpu_seconds_total"
	MetricProcessRSS = "process_resident_memory_bytes"
	MetricGoroutines = "go_goroutines"
	MetricHeapInuse  = "go_memstats_heap_inuse_bytes"
)

// metrics are the relay's Prometheus series. Each Server has its own registry, so tests
// can run several servers in one process. Label values are resolved once, up front, so
// the per-tick path only increments.
type metrics struct {
	reg *prometheus.Registry

	matchesLobby, matchesRunning prometheus.Gauge
	matchesEnded                 prometheus.Counter
	connPlayers, connSpectators  prometheus.Gauge
	connRejected                 prometheus.Counter
	frames                       prometheus.Counter
	framesSent                   prometheus.Counter
	commands                     prometheus.Counter
	commandsLate                 prometheus.Counter
	rejected                     map[lockstep.RejectReason]prometheus.Counter
	rejectedOther                prometheus.Counter
	checkpoints                  prometheus.Counter
	desyncs                      prometheus.Counter
	protocolErrors               prometheus.Counter
	slowDrops                    prometheus.Counter
	dgram                        datagramMetrics
	queueDepth                   prometheus.Histogram
	tickLateness                 prometheus.Histogram
	ticksLate                    prometheus.Counter
	matchesShed                  prometheus.Counter
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	matches := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tickrelay_matches", Help: "Matches by state."}, []string{"state"})
	conns := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tickrelay_connections", Help: "Joined WebSocket connections by role."}, []string{"role"})
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tickrelay_commands_rejected_total", Help: "Commands refused, by reason."}, []string{"reason"})
	f(matches)
	f(conns)
	f(rejected)
	m := &metrics{
		reg:            reg,
		matchesLobby:   matches.WithLabelValues("lobby"),
		matchesRunning: matches.WithLabelValues("running"),
		matchesEnded:   f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_matches_ended_total", Help: "Matches that ended."})).(prometheus.Counter),
		connPlayers:    conns.WithLabelValues("player"),
		connSpectators: conns.WithLabelValues("spectator"),
		connRejected:   f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_connections_rejected_total", Help: "Connections refused (bad token, limits, full)."})).(prometheus.Counter),
		frames:         f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_frames_total", Help: "Ticks sealed."})).(prometheus.Counter),
		framesSent:     f(prometheus.NewCounter(prometheus.CounterOpts{Name: MetricFramesSent, Help: "Frames queued to player connections (as datagrams alone to players on WebTransport who take them so)."})).(prometheus.Counter),
		commands:       f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_commands_total", Help: "Commands accepted."})).(prometheus.Counter),
		commandsLate:   f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_commands_late_total", Help: "Accepted commands moved past their target tick because it was already sealed."})).(prometheus.Counter),
		rejected:       map[lockstep.RejectReason]prometheus.Counter{},
		rejectedOther:  rejected.WithLabelValues("other"),
		checkpoints:    f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_checkpoints_total", Help: "Checkpoints the players agreed on."})).(prometheus.Counter),
		desyncs:        f(prometheus.NewCounter(prometheus.CounterOpts{Name: MetricDesyncs, Help: "Desync verdicts."})).(prometheus.Counter),
		protocolErrors: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_protocol_errors_total", Help: "Client messages answered with an Error."})).(prometheus.Counter),
		slowDrops:      f(prometheus.NewCounter(prometheus.CounterOpts{Name: MetricSlowDrops, Help: "Connections closed because their send queue was full."})).(prometheus.Counter),
		dgram:          newDatagramMetrics(f),
		queueDepth: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickrelay_send_queue_depth", Help: "Deepest player send queue of a match, observed at each sealed tick.",
			Buckets: []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256},
		})).(prometheus.Histogram),
		tickLateness: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricTickLateness, Help: "How late each tick was sealed after its deadline on the relay clock.",
			Buckets: []float64{.0001, .0005, .001, .002, .005, .01, .02, .05, .1, .5, 1, 2, 5, 10},
		})).(prometheus.Histogram),
		ticksLate:   f(prometheus.NewCounter(prometheus.CounterOpts{Name: MetricTicksLate, Help: "Ticks sealed later than --max-tick-lateness after their deadline: the relay fell behind its clock."})).(prometheus.Counter),
		matchesShed: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_matches_shed_total", Help: "Match creations refused because the relay was behind its clock (503)."})).(prometheus.Counter),
	}
	for _, r := range []lockstep.RejectReason{lockstep.TooFarAhead, lockstep.TooManyCommands, lockstep.PayloadTooLarge, lockstep.DuplicateSeq} {
		m.rejected[r] = rejected.WithLabelValues(strings.ReplaceAll(r.String(), " ", "_"))
	}
	return m
}

func (m *metrics) reject(r lockstep.RejectReason) {
	if c, ok := m.rejected[r]; ok {
		c.Inc()
		return
	}
	m.rejectedOther.Inc()
}
