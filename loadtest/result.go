package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
)

// Result is everything one `tickrelay loadtest` measured, as written by --report.
type Result struct {
	Run        *Report      `json:"run,omitempty"`
	Floor      *FloorReport `json:"floor,omitempty"`
	InputFloor *FloorReport `json:"input_floor,omitempty"`
	Syscall    *FloorReport `json:"syscall_floor,omitempty"`
	Efficiency *Efficiency  `json:"efficiency,omitempty"`
	Ramp       *RampReport  `json:"ramp,omitempty"`
}

// Efficiency compares the relay's CPU per delivered frame with the floor's, measured in
// the same process one after the other.
type Efficiency struct {
	RelayUsPerFrame float64 `json:"relay_us_per_frame"`
	FloorUsPerFrame float64 `json:"floor_us_per_frame"`
	// Ratio is relay / floor, server side only (profile labels); ProcessRatio the same for
	// the whole process, bots and readers included.
	Ratio        float64 `json:"ratio"`
	ProcessRatio float64 `json:"process_ratio"`
	// With the raw-write floor (one write syscall per frame) in the same run: its server
	// CPU per frame, and the relay's and the floor's as ratios to it.
	SyscallUsPerFrame  float64 `json:"syscall_us_per_frame,omitempty"`
	RelaySyscallRatio  float64 `json:"relay_syscall_ratio,omitempty"`
	FloorSyscallRatio  float64 `json:"floor_syscall_ratio,omitempty"`
	RelayJitterP99Ms   float64 `json:"relay_jitter_p99_ms"`
	FloorJitterP99Ms   float64 `json:"floor_jitter_p99_ms"`
	SyscallJitterP99Ms float64 `json:"syscall_jitter_p99_ms,omitempty"`
	// The same p99s from the kernel's receive times (Linux): the senders' delivery
	// timing, without the receivers' scheduling (the bots do more work per frame than
	// the floors' readers, which only read).
	RelayArrivalP99Ms   *float64 `json:"relay_arrival_jitter_p99_ms,omitempty"`
	FloorArrivalP99Ms   *float64 `json:"floor_arrival_jitter_p99_ms,omitempty"`
	SyscallArrivalP99Ms *float64 `json:"syscall_arrival_jitter_p99_ms,omitempty"`
	// With the input floor in the same run (the floor whose players send what the bots
	// send, which it reads): its server CPU per frame, relay / it, and its p99s.
	InputFloorUsPerFrame   float64  `json:"input_floor_us_per_frame,omitempty"`
	InputRatio             float64  `json:"input_ratio,omitempty"`
	InputFloorJitterP99Ms  float64  `json:"input_floor_jitter_p99_ms,omitempty"`
	InputFloorArrivalP99Ms *float64 `json:"input_floor_arrival_jitter_p99_ms,omitempty"`
	// Each run's steal on this machine, the most of any CPU (CPUReport.StealPercent; nil
	// where not measured): the runs of one comparison happen one after another, and a
	// host busier during one of them moves its jitter tail.
	RelayStealMax      *float64 `json:"relay_steal_max_percent,omitempty"`
	FloorStealMax      *float64 `json:"floor_steal_max_percent,omitempty"`
	InputFloorStealMax *float64 `json:"input_floor_steal_max_percent,omitempty"`
	SyscallStealMax    *float64 `json:"syscall_steal_max_percent,omitempty"`
}

// mostStolen is the highest of pct, nil if it is empty.
func mostStolen(pct []float64) *float64 {
	if len(pct) == 0 {
		return nil
	}
	m := slices.Max(pct)
	return &m
}

// stealOf is a floor report's mostStolen, nil for a floor that did not run.
func stealOf(f *FloorReport) *float64 {
	if f == nil {
		return nil
	}
	return mostStolen(f.CPU.StealPercent)
}

// p99Of is p's p99, nil if p is.
func p99Of(p *Percentiles) *float64 {
	if p == nil {
		return nil
	}
	return &p.P99
}

// Compare returns the relay's efficiency against the floor and, those not nil, the input
// floor and the raw-write floor.
func Compare(run *Report, floor, inputs, syscall *FloorReport) *Efficiency {
	e := &Efficiency{RelayUsPerFrame: run.CPU.RelayUsPerFrame, FloorUsPerFrame: floor.CPU.RelayUsPerFrame,
		RelayJitterP99Ms: run.Jitter.P99, FloorJitterP99Ms: floor.Jitter.P99,
		RelayArrivalP99Ms: p99Of(run.Arrival), FloorArrivalP99Ms: p99Of(floor.Arrival)}
	if e.FloorUsPerFrame > 0 {
		e.Ratio = e.RelayUsPerFrame / e.FloorUsPerFrame
	}
	if floor.CPU.ProcessUsPerFrame > 0 {
		e.ProcessRatio = run.CPU.ProcessUsPerFrame / floor.CPU.ProcessUsPerFrame
	}
	if syscall != nil && syscall.CPU.RelayUsPerFrame > 0 {
		e.SyscallUsPerFrame = syscall.CPU.RelayUsPerFrame
		e.RelaySyscallRatio = e.RelayUsPerFrame / e.SyscallUsPerFrame
		e.FloorSyscallRatio = e.FloorUsPerFrame / e.SyscallUsPerFrame
		e.SyscallJitterP99Ms = syscall.Jitter.P99
		e.SyscallArrivalP99Ms = p99Of(syscall.Arrival)
	}
	if inputs != nil && inputs.CPU.RelayUsPerFrame > 0 {
		e.InputFloorUsPerFrame = inputs.CPU.RelayUsPerFrame
		e.InputRatio = e.RelayUsPerFrame / e.InputFloorUsPerFrame
		e.InputFloorJitterP99Ms = inputs.Jitter.P99
		e.InputFloorArrivalP99Ms = p99Of(inputs.Arrival)
	}
	e.RelayStealMax, e.FloorStealMax = mostStolen(run.CPU.StealPercent), stealOf(floor)
	e.InputFloorStealMax, e.SyscallStealMax = stealOf(inputs), stealOf(syscall)
	return e
}

// WriteText writes the floor's numbers for people.
func (f *FloorReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "floor     %d connections, %d-byte frame, %d frames (%.0f/s) in %.1f s; jitter p99 %.2f ms, max %.2f ms; %d queue drops, %d dropped\n",
		f.Connections, f.FrameBytes, f.Frames, f.PerSecond, f.Seconds, f.Jitter.P99, f.Jitter.Max, f.QueueDrops, f.Dropped)
	fmt.Fprintf(w, "          cpu process %.2f s (server %.2f, readers %.2f, runtime %.2f); per delivered frame: server %.1f µs, process %.1f µs, %.2f write syscalls, %.3f context switches\n",
		f.CPU.ProcessSeconds, f.CPU.ServerSeconds, f.CPU.SwarmSeconds, f.CPU.RuntimeSeconds, f.CPU.RelayUsPerFrame, f.CPU.ProcessUsPerFrame, f.CPU.WritesPerFrame, f.CPU.SwitchesPerFrame)
	if len(f.CPU.StealPercent) > 0 {
		fmt.Fprintf(w, "          %s\n", stealLine(f.CPU.StealPercent))
	}
	if a := f.Arrival; a != nil {
		fmt.Fprintf(w, "          jitter at arrival (kernel receive times): p50 %.2f, p99 %.2f, p99.9 %.2f, max %.2f ms\n", a.P50, a.P99, a.P999, a.Max)
	}
	if f.InputRate > 0 {
		fmt.Fprintf(w, "          input: each player paced at %.1f messages/s, each spectator at %.1f; the server read %d (%.0f/s)\n", f.InputRate, pingRate(), f.ClientMessages, float64(f.ClientMessages)/max(f.Seconds, 1e-9))
	}
}

// WriteText writes the comparison for people.
func (e *Efficiency) WriteText(w io.Writer) {
	if e.FloorUsPerFrame == 0 {
		fmt.Fprintln(w, "efficiency not measured: the floor's profile holds no server samples (run longer)")
		return
	}
	fmt.Fprintf(w, "efficiency relay %.1f µs per delivered frame vs floor %.1f µs: %.2f× the floor (whole process: %.2f×)\n",
		e.RelayUsPerFrame, e.FloorUsPerFrame, e.Ratio, e.ProcessRatio)
	if e.InputFloorUsPerFrame > 0 {
		fmt.Fprintf(w, "          input floor (reads what the bots send) %.1f µs per frame: relay %.2f× of it\n", e.InputFloorUsPerFrame, e.InputRatio)
	}
	if e.SyscallUsPerFrame > 0 {
		fmt.Fprintf(w, "          raw write syscall %.1f µs per frame: relay %.2f×, floor %.2f× of it\n",
			e.SyscallUsPerFrame, e.RelaySyscallRatio, e.FloorSyscallRatio)
	}
	// A floor that did not run shows as "-".
	measured := func(p99 float64, ran bool) *float64 {
		if !ran {
			return nil
		}
		return &p99
	}
	fmt.Fprintf(w, "          jitter p99: relay %.2f ms, floor %.2f ms, input floor %s, raw write %s\n", e.RelayJitterP99Ms, e.FloorJitterP99Ms,
		msOrDash(measured(e.InputFloorJitterP99Ms, e.InputFloorUsPerFrame > 0)), msOrDash(measured(e.SyscallJitterP99Ms, e.SyscallUsPerFrame > 0)))
	if e.RelayArrivalP99Ms != nil && e.FloorArrivalP99Ms != nil {
		fmt.Fprintf(w, "          at arrival (kernel receive times): relay %.2f ms, floor %.2f ms, input floor %s, raw write %s\n",
			*e.RelayArrivalP99Ms, *e.FloorArrivalP99Ms, msOrDash(e.InputFloorArrivalP99Ms), msOrDash(e.SyscallArrivalP99Ms))
	}
	if e.RelayStealMax != nil || e.FloorStealMax != nil {
		fmt.Fprintf(w, "          steal on this machine, the most of any CPU: relay %s, floor %s, input floor %s, raw write %s of its run\n",
			pctOrDash(e.RelayStealMax), pctOrDash(e.FloorStealMax), pctOrDash(e.InputFloorStealMax), pctOrDash(e.SyscallStealMax))
	}
}

// pctOrDash formats a percentage, or "-" for one not measured.
func pctOrDash(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", *p)
}

// WriteJSON writes the result to path, indented.
func (r *Result) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// msOrDash is *p in milliseconds, or "-" if p is nil.
func msOrDash(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", *p)
}
