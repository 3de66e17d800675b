//go:build !linux

package clock

import "time"

// phaseWaiter waits for a phase's instants on a Go timer (on Linux, a timerfd: see
// wait_linux.go).
type phaseWaiter struct{ goTimer }

func newPhaseWaiter() *phaseWaiter { return &phaseWaiter{} }

// nap sleeps about d; false if stop closed.
func (w *phaseWaiter) nap(d time.Duration, stop <-chan struct{}) bool { return w.sleep(d, stop) }

func (w *phaseWaiter) interrupt() {}

func (w *phaseWaiter) close() { w.stop() }
