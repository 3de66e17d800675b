package loadtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestJudgeIsTheOneRuleEveryRunPassesOrFailsBy(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Report)
		why  string // "" when the run passes
	}{
		{"a clean run within the jitter threshold passes", func(*Report) {}, ""},
		{"jitter above the threshold fails", func(r *Report) { r.Jitter.P99 = 10.5 }, "p99 frame jitter at the bots 10.5 ms is above 10.0 ms"},
		{"jitter at the threshold passes", func(r *Report) { r.Jitter.P99 = 10 }, ""},
		{"where frames were stamped, their arrival is judged, not the bots' own timing",
			func(r *Report) { r.Jitter.P99, r.Arrival = 25, &Percentiles{P99: 4, Count: 1000} }, ""},
		{"jitter at arrival above the threshold fails",
			func(r *Report) { r.Arrival = &Percentiles{P99: 12.5, Count: 1000} }, "p99 frame jitter at arrival 12.5 ms is above 10.0 ms"},
		{"arrival measured for too few of the intervals: the bots' timing is judged",
			func(r *Report) { r.Jitter.P99, r.Arrival = 25, &Percentiles{P99: 4, Count: 899} }, "p99 frame jitter at the bots 25.0 ms"},
		{"latency past its budget is reported, not failed", func(r *Report) { r.Latency.P99 = 2 * r.LatencyBudgetMs }, ""},
		{"a desync verdict fails", func(r *Report) { r.Desyncs = 1 }, "desyncs: 1 verdicts to players"},
		{"a final-state mismatch fails", func(r *Report) { r.StateMismatches = 1 }, "1 final-state mismatches"},
		{"a desync only the relay counted fails", func(r *Report) { r.Relay.Desyncs = 2 }, "2 counted by the relay"},
		{"a dropped player fails", func(r *Report) { r.Dropped.Players = 1 }, "connections lost: 1 players"},
		{"a dropped spectator fails", func(r *Report) { r.Dropped.Spectators = 3 }, "3 spectators dropped"},
		{"a slow connection the relay cut off fails", func(r *Report) { r.Relay.SlowDrops = 1 }, "1 cut off as slow"},
		{"a connection that reconnected fails", func(r *Report) { r.Dropped.Reconnects = 1 }, "1 reconnected"},
		{"more perceived hitches than the bar fails",
			func(r *Report) { r.HitchThreshold, r.Hitches.PerPlayerMinute, r.Hitches.Ticks = 1, 1.5, 2 },
			"1.50 perceived hitches per player-minute (frames more than 2 ticks late) is above 1.00"},
		{"hitches at the bar pass", func(r *Report) { r.HitchThreshold, r.Hitches.PerPlayerMinute = 1, 1 }, ""},
		{"without a bar, hitches are reported only", func(r *Report) { r.Hitches.PerPlayerMinute = 30 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{LatencyBudgetMs: 138}
			r.Jitter.P99, r.Jitter.Count, r.Latency.P99 = 2, 1000, 100
			tc.edit(r)
			v := Judge(r, 10*time.Millisecond)
			if tc.why == "" {
				assert.True(t, v.Pass, v.String())
				assert.Empty(t, v.Why)
				assert.Equal(t, "pass", v.String())
				return
			}
			assert.False(t, v.Pass)
			assert.Len(t, v.Why, 1)
			assert.Contains(t, v.String(), tc.why)
		})
	}
}

func TestJudgeNamesEveryBarARunMissed(t *testing.T) {
	r := &Report{}
	r.Jitter.P99, r.Desyncs, r.Dropped.Players = 50, 1, 1
	v := Judge(r, 10*time.Millisecond)
	assert.False(t, v.Pass)
	assert.Len(t, v.Why, 3)
}

func TestARampStepCarriesItsRunsVerdict(t *testing.T) {
	r := &Report{Matches: 7, Verdict: Verdict{Why: []string{"desyncs: 1"}}}
	s := rampStep(r)
	assert.Equal(t, r.Verdict, s.Verdict)
	assert.Contains(t, s.String(), "FAIL: desyncs: 1")
}
