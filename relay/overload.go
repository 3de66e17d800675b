// Falling behind the relay clock: how the relay notices, says so and sheds load.

package relay

import (
	"fmt"
	"sync/atomic"
	"time"
)

// overloadHold is how long after its last late tick the relay keeps refusing new
// matches.
const overloadHold = time.Second

// clockWatch remembers when the relay last sealed a tick late, and how late.
type clockWatch struct {
	lastLate atomic.Int64 // unix nanoseconds of the last late tick; 0 never
	worst    atomic.Int64 // its lateness in nanoseconds
}

// observeLateness notes one sealed tick's lateness; it reports whether the tick was late.
func (s *Server) observeLateness(late time.Duration, now time.Time) bool {
	if late <= s.opts.MaxTickLateness {
		return false
	}
	s.metrics.ticksLate.Inc()
	s.clock.lastLate.Store(now.UnixNano())
	s.clock.worst.Store(int64(late))
	return true
}

// overloaded returns a non-nil error wrapping ErrOverloaded while the relay is behind.
func (s *Server) overloaded(now time.Time) error {
	last := s.clock.lastLate.Load()
	if last == 0 || now.UnixNano()-last > int64(overloadHold) {
		return nil
	}
	s.metrics.matchesShed.Inc()
	return fmt.Errorf("%w: a tick was sealed %s late (limit %s) %s ago; retry later, or use another relay",
		ErrOverloaded, time.Duration(s.clock.worst.Load()).Round(time.Millisecond), s.opts.MaxTickLateness,
		time.Duration(now.UnixNano()-last).Round(time.Millisecond))
}
