//go:build !linux

package relay

import "time"

// phaseWaiter waits for a phase's instants on a Go timer (on Linux, a timerfd: see
// phasewait_linux.go).
type phaseWaiter struct{ goTimer }

func newPhaseWaiter() *phaseWaiter { return &phaseWaiter{} }

// wait blocks until t, or until stop closes: then it returns false.
func (w *phaseWaiter) wait(t time.Time, stop <-chan struct{}) bool {
	for {
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		if !w.sleep(d, stop) {
			return false
		}
	}
}

func (w *phaseWaiter) interrupt() {}

func (w *phaseWaiter) close() { w.stop() }
