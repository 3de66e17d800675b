package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Result is everything one `tickrelay loadtest` measured, as written by --report.
type Result struct {
	Run        *Report      `json:"run,omitempty"`
	Floor      *FloorReport `json:"floor,omitempty"`
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
}

// Compare returns the relay's efficiency against the floor.
func Compare(run *Report, floor *FloorReport) *Efficiency {
	e := &Efficiency{RelayUsPerFrame: run.CPU.RelayUsPerFrame, FloorUsPerFrame: floor.CPU.RelayUsPerFrame}
	if e.FloorUsPerFrame > 0 {
		e.Ratio = e.RelayUsPerFrame / e.FloorUsPerFrame
	}
	if floor.CPU.ProcessUsPerFrame > 0 {
		e.ProcessRatio = run.CPU.ProcessUsPerFrame / floor.CPU.ProcessUsPerFrame
	}
	return e
}

// WriteText writes the floor's numbers for people.
func (f *FloorReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "floor     %d connections, %d-byte frame, %d frames (%.0f/s) in %.1f s; jitter p99 %.2f ms, max %.2f ms; %d queue drops, %d dropped\n",
		f.Connections, f.FrameBytes, f.Frames, f.PerSecond, f.Seconds, f.Jitter.P99, f.Jitter.Max, f.QueueDrops, f.Dropped)
	fmt.Fprintf(w, "          cpu process %.2f s (server %.2f, readers %.2f, runtime %.2f); per delivered frame: server %.1f µs, process %.1f µs\n",
		f.CPU.ProcessSeconds, f.CPU.ServerSeconds, f.CPU.SwarmSeconds, f.CPU.RuntimeSeconds, f.CPU.RelayUsPerFrame, f.CPU.ProcessUsPerFrame)
}

// WriteText writes the comparison for people.
func (e *Efficiency) WriteText(w io.Writer) {
	if e.FloorUsPerFrame == 0 {
		fmt.Fprintln(w, "efficiency not measured: the floor's profile holds no server samples (run longer)")
		return
	}
	fmt.Fprintf(w, "efficiency relay %.1f µs per delivered frame vs floor %.1f µs: %.2f× the floor (whole process: %.2f×)\n",
		e.RelayUsPerFrame, e.FloorUsPerFrame, e.Ratio, e.ProcessRatio)
}

// WriteJSON writes the result to path, indented.
func (r *Result) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
