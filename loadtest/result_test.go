package loadtest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompareGivesTheRelayAsARatioToEachFloorThatRan(t *testing.T) {
	run := &Report{CPU: CPUReport{RelayUsPerFrame: 20, ProcessUsPerFrame: 20}, Jitter: Percentiles{P99: 1.5}}
	floor := &FloorReport{CPU: CPUReport{RelayUsPerFrame: 16, ProcessUsPerFrame: 16}, Jitter: Percentiles{P99: 1.2}}
	inputs := &FloorReport{CPU: CPUReport{RelayUsPerFrame: 25}, Jitter: Percentiles{P99: 1.7}}
	raw := &FloorReport{CPU: CPUReport{RelayUsPerFrame: 10}, Jitter: Percentiles{P99: 0.9}}

	e := Compare(run, floor, inputs, raw)
	assert.InDelta(t, 1.25, e.Ratio, 1e-9)
	assert.InDelta(t, 0.8, e.InputRatio, 1e-9)
	assert.InDelta(t, 2.0, e.RelaySyscallRatio, 1e-9)
	assert.InDelta(t, 1.6, e.FloorSyscallRatio, 1e-9)
	assert.InDelta(t, 1.7, e.InputFloorJitterP99Ms, 1e-9)
	var out bytes.Buffer
	e.WriteText(&out)
	assert.Contains(t, out.String(), "input floor (reads what the bots send) 25.0 µs per frame: relay 0.80× of it")
	assert.Contains(t, out.String(), "jitter p99: relay 1.50 ms, floor 1.20 ms, input floor 1.70 ms, raw write 0.90 ms")

	alone := Compare(run, floor, nil, nil)
	assert.Zero(t, alone.InputRatio)
	assert.Zero(t, alone.RelaySyscallRatio)
	out.Reset()
	alone.WriteText(&out)
	assert.NotContains(t, out.String(), "input floor (reads")
	assert.Contains(t, out.String(), "input floor -, raw write -", "floors that did not run show no figure")
}
