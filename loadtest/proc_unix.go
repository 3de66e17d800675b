//go:build unix

package loadtest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU returns the user + system CPU time of this whole process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processRSS returns this process's resident set size in bytes (Linux /proc; 0 where
// that is missing).
func processRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// processCounts returns this process's write syscalls (Linux /proc/self/io syscw; 0
// where that is missing) and context switches, voluntary and not (getrusage).
func processCounts() (writes, switches int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		switches = int64(ru.Nvcsw) + int64(ru.Nivcsw) // int32 on 32-bit systems
	}
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, switches
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			writes, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return writes, switches
}

// cpuSteal returns each CPU's steal time in clock ticks (Linux /proc/stat; nil where
// that is missing).
func cpuSteal() []int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	steal, err := parseSteal(b)
	if err != nil {
		return nil
	}
	return steal
}
