// Package loadtest will implement bot swarms against a relay, with latency histograms and
// reports. It is not written yet (see the load-testing issue).
package loadtest
