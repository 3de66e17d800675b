package loadtest

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// Ramp defaults, each a flag of `tickrelay loadtest`.
var (
	// DefaultRampLevels are the match counts a ramp tries, in order.
	DefaultRampLevels = []int{25, 50, 100, 150, 200, 250, 300, 350, 400, 500, 600, 800, 1000}
)

// DefaultStepDuration: each ramp level is measured for 20 s.
const DefaultStepDuration = 20 * time.Second

// RampOptions shape a ramp; zero values mean the defaults above.
type RampOptions struct {
	Levels       []int
	StepDuration time.Duration
	// OnStep, if set, is called after each level with its result.
	OnStep func(RampStep)
}

// RampStep is one level of a ramp.
type RampStep struct {
	Matches     int     `json:"matches"`
	Connections int     `json:"connections"`
	JitterP99Ms float64 `json:"frame_jitter_p99_ms"`
	// ArrivalP99Ms is the same at arrival, where measured: the one judged then.
	ArrivalP99Ms    *float64 `json:"frame_arrival_jitter_p99_ms,omitempty"`
	LatencyP99Ms    float64  `json:"latency_p99_ms"`
	LatencyBudgetMs float64  `json:"latency_budget_ms"`
	FramesPerSecond float64  `json:"frames_per_second"`
	Desyncs         int64    `json:"desyncs"`
	Dropped         int      `json:"dropped"`
	ProcessCPU      float64  `json:"process_cpu_cores"` // CPU seconds per second
	RelayUsPerFrame float64  `json:"relay_us_per_frame"`
	RelayPeakRSS    int64    `json:"peak_rss"`
	Verdict         Verdict  `json:"verdict"`
	Report          *Report  `json:"-"`
}

// RampReport is a capacity curve: the last passing level is the capacity.
type RampReport struct {
	ThresholdMs float64    `json:"jitter_threshold_ms"`
	StepSeconds float64    `json:"step_seconds"`
	Steps       []RampStep `json:"steps"`
	Capacity    int        `json:"capacity_matches"`
}

// Ramp runs cfg's swarm at each level of matches in turn, each for a step, until one
// fails (Judge at cfg.JitterThreshold) or cannot run.
func Ramp(ctx context.Context, cfg Config, o RampOptions) (*RampReport, error) {
	if len(o.Levels) == 0 {
		o.Levels = DefaultRampLevels
	}
	if o.StepDuration <= 0 {
		o.StepDuration = DefaultStepDuration
	}
	cfg = cfg.withDefaults()
	out := &RampReport{ThresholdMs: ms64(cfg.JitterThreshold), StepSeconds: o.StepDuration.Seconds()}
	for _, level := range o.Levels {
		if ctx.Err() != nil {
			break
		}
		c := cfg
		c.Matches, c.Duration = level, o.StepDuration
		runtime.GC() // start each level from the memory the previous one left behind, collected
		rep, err := Run(ctx, c)
		step := RampStep{Matches: level, Verdict: Verdict{Why: []string{fmt.Sprint(err)}}}
		if err == nil {
			step = rampStep(rep)
		}
		out.Steps = append(out.Steps, step)
		if o.OnStep != nil {
			o.OnStep(step)
		}
		if !step.Verdict.Pass {
			break
		}
		out.Capacity = level
	}
	return out, ctx.Err()
}

func rampStep(r *Report) RampStep {
	return RampStep{
		Matches: r.Matches, Connections: r.Connections.Players + r.Connections.Spectators,
		JitterP99Ms: r.Jitter.P99, ArrivalP99Ms: p99Of(r.Arrival), LatencyP99Ms: r.Latency.P99, LatencyBudgetMs: r.LatencyBudgetMs,
		FramesPerSecond: r.Frames.PerSecond, Desyncs: r.Desyncs + int64(r.StateMismatches),
		Dropped:    r.Dropped.Players + r.Dropped.Spectators + int(r.Relay.SlowDrops),
		ProcessCPU: r.CPU.ProcessSeconds / max(r.Seconds, 1e-9), RelayUsPerFrame: r.CPU.RelayUsPerFrame,
		RelayPeakRSS: max(r.Memory.RelayPeak, r.Memory.ProcessPeak), Verdict: r.Verdict, Report: r,
	}
}

// String is one line of the capacity curve.
func (s RampStep) String() string {
	arrival := "     -"
	if s.ArrivalP99Ms != nil {
		arrival = fmt.Sprintf("%6.2f", *s.ArrivalP99Ms)
	}
	return fmt.Sprintf("%5d matches %6d conns  jitter p99 at arrival %s ms, at the bots %6.2f ms  latency p99 %6.1f ms (budget %.1f)  %7.0f frames/s  cpu %.2f cores  relay %5.1f µs/frame  rss %s  %s",
		s.Matches, s.Connections, arrival, s.JitterP99Ms, s.LatencyP99Ms, s.LatencyBudgetMs, s.FramesPerSecond, s.ProcessCPU, s.RelayUsPerFrame, mib(s.RelayPeakRSS), s.Verdict)
}
