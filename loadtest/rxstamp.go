// Kernel receive times: when the bytes of a connection's reads reached the socket, by
// the kernel's clock, not when the reading goroutine got to run. Frame jitter from these
// stamps is the sender's delivery timing (plus loopback's few microseconds), mostly free
// of the receiving swarm's own scheduling; the relay's bots and the floors' readers are
// measured the same way, so the comparison of their senders is fair.
//
// A stamp belongs to a read, not to a frame: it is the receive time of the last segment
// the read consumed. Only a frame that came alone out of its read has its own arrival
// time; frames that shared a read (a reader a period or more behind) are left out, and
// break the chain of intervals (arrivals).

package loadtest

import (
	"context"
	"net"
	"net/http"
	"time"
)

// rxStamp is what a connection's reads leave for its reader: the number of reads that
// returned data, and the kernel's receive time of the last one's bytes (zero if the
// kernel gave none). One rxStamp serves every connection a swarm connection dials, in
// turn (a reconnecting client dials again); only the connection being read writes it,
// on the reader's goroutine.
type rxStamp struct {
	reads uint64
	at    time.Time
}

// stampedDialer dials TCP connections whose reads update st.
func stampedDialer(st *rxStamp) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return stamped(c, st), nil
	}
}

// stampedClient is an HTTP client (for a WebSocket dial) whose connections update st. No
// keep-alive: a connection dialed for a request that gave up is closed, never pooled and
// read in the background.
func stampedClient(st *rxStamp) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: stampedDialer(st), DisableKeepAlives: true}}
}

// arrivals turns one connection's frames, each with its read's stamp, into intervals
// between the arrivals of consecutive frames. An interval is known one frame late: a
// frame's stamp is its own only once the next frame is seen to come from another read.
type arrivals struct {
	last     time.Time // the frame before cur, if it was alone in its read; else zero
	cur      time.Time // the newest frame's stamp
	curRead  uint64    // its read; 0 before any frame
	curAlone bool      // no other frame so far came from its read
}

// frame records a frame that came out of read number read, stamped at (zero: no
// stamp), and returns |the previous interval − period| in µs once it is known.
func (a *arrivals) frame(read uint64, at time.Time, period time.Duration) (us int64, ok bool) {
	if a.curRead != 0 && read == a.curRead {
		a.curAlone = false // two frames, one read: neither has its own arrival time
		return 0, false
	}
	// The previous frame is settled: it was alone in its read, or not.
	if a.curAlone && !a.cur.IsZero() {
		if !a.last.IsZero() {
			us, ok = abs(a.cur.Sub(a.last)-period).Microseconds(), true
		}
		a.last = a.cur
	} else {
		a.last = time.Time{}
	}
	a.cur, a.curRead, a.curAlone = at, read, true
	return us, ok
}

// reset forgets the frames so far (the connection was replaced, or the stream was not
// live): no interval spans the break.
func (a *arrivals) reset() { *a = arrivals{} }
