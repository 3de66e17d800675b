package loadtest

import "time"

// frameLateness times each live frame of one connection against the relay's clock, which
// seals tick T at a fixed offset plus T periods: arrival − T·period is the same for
// every frame that came on time, and grows by however long a frame was held (a lost
// segment waiting for its retransmission, a stalled sender). A frame's frameLateness is that
// against the connection's least so far, its best path. Unlike jitter (the interval
// between two frames), it counts every frame a stall held, not only the first: a
// 300 ms stall is ten late frames, one hitch.
//
// Arrival is the kernel's receive stamp of the read that held the frame where there is
// one (rxStamp): frames a stall released together share the stamp of the last, which
// is when they could all be read.
type frameLateness struct {
	best    int64 // least arrival − tick·period seen, Unix ns
	known   bool
	hitched bool // the previous frame was more than HitchTicks late
}

// frame returns how late the frame of tick arrived at at, and whether it starts a
// hitch (it is more than HitchTicks late and the frame before it was not).
func (l *frameLateness) frame(tick uint64, at time.Time, period time.Duration) (late time.Duration, starts bool) {
	off := at.UnixNano() - int64(tick)*int64(period)
	if !l.known || off < l.best {
		l.best, l.known = off, true
	}
	late = time.Duration(off - l.best)
	over := late > HitchTicks*period
	starts = over && !l.hitched
	l.hitched = over
	return late, starts
}
