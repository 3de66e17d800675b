// Falling behind the relay clock: how the relay notices, says so and sheds load.

package relay

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// ErrOverloaded means the relay sealed a tick later than Options.MaxTickLateness within
// the last overloadHold: it is behind its clock, and a new match would make every
// match's latency grow. The match API answers 503 with Retry-After.
var ErrOverloaded = errors.New("relay: behind its clock (ticks sealed late); not taking new matches")

// overloadHold is how long after its last late tick the relay keeps refusing new
// matches, and the Retry-After it announces.
const overloadHold = time.Second

// clockWatch remembers when the relay last sealed a tick late, and how late.
type clockWatch struct {
	lastLate atomic.Int64 // unix nanoseconds of the last late tick; 0 never
	worst    atomic.Int64 // its lateness in nanoseconds
}

// observe notes one sealed tick's lateness; it reports whether the tick was late.
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
	return fmt.Errorf("%w: a tick was sealed %s late (limit %s) %s ago; retry in %s",
		ErrOverloaded, time.Duration(s.clock.worst.Load()).Round(time.Millisecond), s.opts.MaxTickLateness,
		time.Duration(now.UnixNano()-last).Round(time.Millisecond), overloadHold)
}

// writeOverloaded answers a refused match: 503, Retry-After in seconds.
func writeOverloaded(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", strconv.Itoa(int((overloadHold+time.Second-1)/time.Second)))
	writeError(w, http.StatusServiceUnavailable, err.Error())
}
