// Package helper is a library a sim calls: its findings are reported in the sim, at the
// call, with the chain that leads to them.
package helper

import "time"

// Jitter looks harmless.
func Jitter(x int64) int64 { return x + wobble() } // want Jitter:`^time: helper.Jitter → helper.wobble$`

func wobble() int64 { return time.Now().UnixNano() % 3 }

// Clamp is deterministic.
func Clamp(x, lo, hi int64) int64 { return min(max(x, lo), hi) }

// Stamp reads the clock, but its caller vouches for it.
//
//tickrelay:deterministic only logged by a test harness, never part of the state
func Stamp() int64 { return time.Now().Unix() }
