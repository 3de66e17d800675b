package loadtest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A /proc/stat in the form Linux 6.1 writes it on a 2-CPU guest (its total line sums
// the CPUs').
const procStat = `cpu  3895323 22015 1007102 7920079 693664 0 239426 26397 0 0
cpu0 1860558 10874 489322 4167181 191593 0 166804 13257 0 0
cpu1 2034765 11141 517780 3752898 502071 0 72622 13140 0 0
intr 1234 0 9 0
ctxt 987654
btime 1764612480
processes 20883
procs_running 2
procs_blocked 0
softirq 1 2 3
`

func TestStealIsReadPerCPUFromProcStat(t *testing.T) {
	steal, err := parseSteal([]byte(procStat))
	require.NoError(t, err)
	assert.Equal(t, []int64{13257, 13140}, steal, "the 8th time of each cpuN line; the total line is skipped")

	// An offline CPU is not listed: it reads offline.
	steal, err = parseSteal([]byte("cpu0 1 2 3 4 5 6 7 8\ncpu2 1 2 3 4 5 6 7 9\n"))
	require.NoError(t, err)
	assert.Equal(t, []int64{8, offline, 9}, steal)

	// On a machine with many interrupts the intr line is longer than a bufio.Scanner's.
	long := "cpu0 1 2 3 4 5 6 7 8\nintr" + strings.Repeat(" 0", 100_000) + "\ncpu1 1 2 3 4 5 6 7 9\n"
	steal, err = parseSteal([]byte(long))
	require.NoError(t, err)
	assert.Equal(t, []int64{8, 9}, steal)

	for _, bad := range []string{
		"",                           // no CPU lines
		"cpu0 1 2 3 4 5 6 7\n",       // a kernel before steal was counted
		"cpu0 1 2 3 4 5 6 7 x\n",     // not a number
		"cpu0 1 2 3 4 5 6 7 -3\n",    // negative
		"cpuX 1 2 3 4 5 6 7 8\n",     // not a CPU number
		"cpu99999 1 2 3 4 5 6 7 8\n", // past any machine
		"cpu+1 1 2 3 4 5 6 7 8\n",    // a sign is not a CPU number
	} {
		_, err := parseSteal([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestStealIsTheShareOfTheWindowEachCPULost(t *testing.T) {
	// 30 ticks of 10 ms in a 15 s window is 2 %.
	assert.InDeltaSlice(t, []float64{2, 0}, stealPercent([]int64{100, 50}, []int64{130, 50}, 15*time.Second), 1e-9)
	assert.Nil(t, stealPercent(nil, []int64{1}, time.Second), "not measured at the start")
	assert.Nil(t, stealPercent([]int64{1}, []int64{1, 2}, time.Second), "the CPUs changed")
	assert.Nil(t, stealPercent([]int64{1}, []int64{2}, 0))
	// A CPU that came online during the window counts steal from before it: unknown.
	assert.Nil(t, stealPercent([]int64{100, offline}, []int64{130, 50_000}, 15*time.Second))
	assert.Nil(t, stealPercent([]int64{100, 7}, []int64{130, offline}, 15*time.Second))

	assert.Equal(t, "cpu0 2.00%, cpu1 0.00%", stealText([]float64{2, 0}))
	assert.Equal(t, "at most 3.00% (cpu4), mean 0.75% over 8 CPUs", stealText([]float64{1, 0, 0, 0, 3, 0, 0, 2}))
}

func TestEfficiencyNamesEachRunsSteal(t *testing.T) {
	run := &Report{CPU: CPUReport{RelayUsPerFrame: 20, StealPercent: []float64{0.5, 1.5}}}
	floor := &FloorReport{CPU: CPUReport{RelayUsPerFrame: 16, StealPercent: []float64{0.25, 0}}}
	e := Compare(run, floor, nil, nil)
	require.NotNil(t, e.RelayStealMax)
	require.NotNil(t, e.FloorStealMax)
	assert.InDelta(t, 1.5, *e.RelayStealMax, 1e-9)
	assert.InDelta(t, 0.25, *e.FloorStealMax, 1e-9)
	assert.Nil(t, e.InputFloorStealMax, "no input floor ran")
	var out bytes.Buffer
	e.WriteText(&out)
	assert.Contains(t, out.String(), "steal on this machine, the most of any CPU: relay 1.50%, floor 0.25%, input floor -, raw write - of its run")
	out.Reset()
	floor.WriteText(&out)
	assert.Contains(t, out.String(), "steal on this machine (the hypervisor ran something else): cpu0 0.25%, cpu1 0.00% of the window")

	e = Compare(&Report{CPU: CPUReport{RelayUsPerFrame: 20}}, &FloorReport{CPU: CPUReport{RelayUsPerFrame: 16}}, nil, nil)
	assert.Nil(t, e.RelayStealMax, "not measured (not Linux)")
	out.Reset()
	e.WriteText(&out)
	assert.NotContains(t, out.String(), "steal")
}

func FuzzParseSteal(f *testing.F) {
	f.Add([]byte(procStat))
	f.Add([]byte("cpu0 1 2 3 4 5 6 7 8\ncpu3 1 2 3 4 5 6 7 9\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		steal, err := parseSteal(b)
		if err != nil {
			return
		}
		if len(steal) == 0 {
			t.Fatal("no error and no CPUs")
		}
		for i, v := range steal {
			if v < 0 && v != offline {
				t.Fatalf("cpu%d: negative steal %d", i, v)
			}
		}
		// Each listed CPU's 8th time is at its index: render the result back and read it.
		var again strings.Builder
		for i, v := range steal {
			if v != offline {
				fmt.Fprintf(&again, "cpu%d 0 0 0 0 0 0 0 %d\n", i, v)
			}
		}
		back, err := parseSteal([]byte(again.String()))
		if err != nil || !slices.Equal(back, steal) {
			t.Fatalf("%v read back as %v (%v)", steal, back, err)
		}
	})
}
