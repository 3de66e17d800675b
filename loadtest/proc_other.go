//go:build !unix

package loadtest

import "time"

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }

// processRSS is not measured on this platform.
func processRSS() int64 { return 0 }

// processCounts is not measured on this platform.
func processCounts() (writes, switches int64) { return 0, 0 }

// cpuSteal is not measured on this platform.
func cpuSteal() []int64 { return nil }
