package loadtest

import (
	"fmt"
	"strings"
	"time"
)

// Verdict is whether a run passed under the load test's one rule (Judge), and if not,
// why.
type Verdict struct {
	Pass bool `json:"pass"`
	// Why names each bar the run missed, for people; empty when it passed.
	Why []string `json:"why,omitempty"`
}

// String is "pass" or "FAIL: " and the reasons.
func (v Verdict) String() string {
	if v.Pass {
		return "pass"
	}
	return "FAIL: " + strings.Join(v.Why, "; ")
}

// Judge is the load test's one pass/fail rule, used by every run (Report.Verdict), each
// level of a ramp, a soak and the exit status of `tickrelay loadtest`. A run passes when
//   - p99 frame jitter is at most jitterThreshold (the relay kept its clock under the
//     load), judged on the relay's delivery (Report.DeliveryJitter: at arrival where the
//     kernel stamps frames, else at the bots, whose own work then counts too),
//   - no desync was seen: no verdict the players received, no match whose peers ended on
//     the same tick with different hashes, none the relay counted, and
//   - no connection was lost: none dropped (players or spectators), cut off by the relay
//     as too slow, or dropped and reconnected on its own, and
//   - players perceived at most Report.HitchThreshold hitches per player-minute (runs
//     of frames more than HitchTicks late): the tail a percentile of jitter hides (one
//     retransmission timeout is one bad interval, but ten frames held).
//
// Command→frame latency is reported against its budget (Report.LatencyBudgetMs) but is
// not a bar: past capacity it grows with jitter, which is the bar.
func Judge(r *Report, jitterThreshold time.Duration) Verdict {
	var why []string
	fail := func(format string, a ...any) { why = append(why, fmt.Sprintf(format, a...)) }
	if j, where := r.DeliveryJitter(); j.P99 > ms64(jitterThreshold) {
		fail("p99 frame jitter %s %.1f ms is above %.1f ms", where, j.P99, ms64(jitterThreshold))
	}
	if r.Desyncs > 0 || r.StateMismatches > 0 || r.Relay.Desyncs > 0 {
		fail("desyncs: %d verdicts to players, %d final-state mismatches, %d counted by the relay", r.Desyncs, r.StateMismatches, r.Relay.Desyncs)
	}
	if r.Dropped.Players > 0 || r.Dropped.Spectators > 0 || r.Relay.SlowDrops > 0 || r.Dropped.Reconnects > 0 {
		fail("connections lost: %d players and %d spectators dropped, %d cut off as slow, %d reconnected", r.Dropped.Players, r.Dropped.Spectators, r.Relay.SlowDrops, r.Dropped.Reconnects)
	}
	if h := r.Hitches; r.HitchThreshold > 0 && h.PerPlayerMinute > r.HitchThreshold {
		fail("%.2f perceived hitches per player-minute (frames more than %d ticks late) is above %.2f", h.PerPlayerMinute, h.Ticks, r.HitchThreshold)
	}
	return Verdict{Pass: len(why) == 0, Why: why}
}

// ms64 is d in milliseconds.
func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
