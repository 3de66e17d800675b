package loadtest

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat's times: clock ticks of 1/100 s on every Linux that
// Go runs on (the kernel's USER_HZ, fixed by its ABI). A 15 s window measures steal to
// within about 0.07 % of it.
const userHZ = 100

// offline marks a CPU that /proc/stat does not list (offline): its steal is unknown.
const offline = -1

// parseSteal reads each CPU's steal time from the text of /proc/stat, in clock ticks,
// indexed by CPU number: the time the hypervisor ran something else while that CPU had
// work. A CPU missing from the text (offline) reads offline.
func parseSteal(b []byte) ([]int64, error) {
	var steal []int64
	for line := range bytes.Lines(b) { // no length limit: the intr line can be long
		f := strings.Fields(string(line))
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		num := f[0][len("cpu"):]
		n, err := strconv.Atoi(num)
		if err != nil || strings.Trim(num, "0123456789") != "" || n >= 1<<16 {
			return nil, fmt.Errorf("loadtest: /proc/stat: %q is not a CPU line", f[0])
		}
		// cpuN user nice system idle iowait irq softirq steal …: steal is the 8th time.
		if len(f) < 9 {
			return nil, fmt.Errorf("loadtest: /proc/stat: %s has %d times, want at least 8 (steal)", f[0], len(f)-1)
		}
		v, err := strconv.ParseInt(f[8], 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("loadtest: /proc/stat: %s steal %q is not a count of ticks", f[0], f[8])
		}
		for len(steal) <= n {
			steal = append(steal, offline)
		}
		steal[n] = v
	}
	if len(steal) == 0 {
		return nil, fmt.Errorf("loadtest: /proc/stat has no per-CPU lines")
	}
	return steal, nil
}

// stealPercent is the share of a window of length d that each CPU lost to the
// hypervisor, from readings at its start and end; nil where either is missing or a CPU
// was offline in either (its counter then spans more than the window).
func stealPercent(start, end []int64, d time.Duration) []float64 {
	if start == nil || len(start) != len(end) || d <= 0 || slices.Contains(start, offline) || slices.Contains(end, offline) {
		return nil
	}
	out := make([]float64, len(start))
	for i := range start {
		out[i] = 100 * float64(max(end[i]-start[i], 0)) / userHZ / d.Seconds()
	}
	return out
}

// stealLine is the text reports' line for a window's StealPercent.
func stealLine(pct []float64) string {
	return "steal on this machine (the hypervisor ran something else): " + stealText(pct) + " of the window"
}

// stealText says what StealPercent holds: every CPU on a small machine, the most and the
// mean on a large one.
func stealText(pct []float64) string {
	if len(pct) <= 4 {
		parts := make([]string, len(pct))
		for i, p := range pct {
			parts[i] = fmt.Sprintf("cpu%d %.2f%%", i, p)
		}
		return strings.Join(parts, ", ")
	}
	most, sum := 0, 0.0
	for i, p := range pct {
		sum += p
		if p > pct[most] {
			most = i
		}
	}
	return fmt.Sprintf("at most %.2f%% (cpu%d), mean %.2f%% over %d CPUs", pct[most], most, sum/float64(len(pct)), len(pct))
}
