//go:build !linux

package relay

import "time"

// phaseWaiter waits for a phase's instants on a Go timer (on Linux, a timerfd: see
// phasewait_linux.go).
type phaseWaiter struct{ t *time.Timer }

func newPhaseWaiter() *phaseWaiter { return &phaseWaiter{} }

// wait blocks until t, or until stop closes: then it returns false.
func (w *phaseWaiter) wait(t time.Time, stop <-chan struct{}) bool {
	for {
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		if w.t == nil {
			w.t = time.NewTimer(d)
		} else {
			w.t.Reset(d)
		}
		select {
		case <-w.t.C:
		case <-stop:
			return false
		}
	}
}

func (w *phaseWaiter) interrupt() {}

func (w *phaseWaiter) close() {
	if w.t != nil {
		w.t.Stop()
	}
}
