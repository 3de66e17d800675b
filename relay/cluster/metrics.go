package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickrelay/tickrelay/relay"
)

// metrics are the node's cluster series, on the relay's registry. Every series of the
// registry is the node's; tickrelay_cluster_node names it.
type metrics struct {
	publish         prometheus.Histogram
	publishFailures prometheus.Counter
	publishRetries  prometheus.Counter
	consumers       prometheus.Gauge
	claims          prometheus.Counter
	forwarded       prometheus.Counter
	watchRestarts   prometheus.Counter
	consumerResets  prometheus.Counter
}

func newMetrics(srv *relay.Server, node string) *metrics {
	reg := srv.Registry()
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tickrelay_cluster_node", Help: "The relay node these series come from (always 1).",
		ConstLabels: prometheus.Labels{"node": node}})
	info.Set(1)
	f(info)
	return &metrics{
		publish: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickrelay_cluster_publish_seconds", Help: "Time for JetStream to acknowledge one write of a match's stream (record before broadcast).",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .02, .05, .1, .5, 2},
		})).(prometheus.Histogram),
		publishFailures: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_cluster_publish_failures_total", Help: "Stream copies JetStream refused or did not acknowledge (the match moved off this node)."})).(prometheus.Counter),
		publishRetries:  f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_cluster_publish_retries_total", Help: "Stream copies and directory compare-and-sets tried again after a passing refusal (the subject's previous write still in process, a leader election)."})).(prometheus.Counter),
		consumers:       f(prometheus.NewGauge(prometheus.GaugeOpts{Name: "tickrelay_cluster_consumers", Help: "JetStream consumers feeding spectators of other nodes' matches (one per match)."})).(prometheus.Gauge),
		claims:          f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_cluster_claims_total", Help: "Matches of dead nodes this node claimed and resumed."})).(prometheus.Counter),
		forwarded:       f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_cluster_forwarded_total", Help: "Match API requests forwarded to the owning node."})).(prometheus.Counter),
		watchRestarts:   f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_cluster_directory_watch_restarts_total", Help: "Directory watches replaced because they were frozen (they missed this node's own heartbeat)."})).(prometheus.Counter),
		consumerResets:  f(prometheus.NewCounter(prometheus.CounterOpts{Name: "tickrelay_cluster_spectator_consumer_restarts_total", Help: "Spectators' consumers replaced because they stopped delivering while the match's stream went on (a NATS server lost)."})).(prometheus.Counter),
	}
}
