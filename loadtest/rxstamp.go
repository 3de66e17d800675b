// Kernel receive times: when the bytes of a connection's reads reached the socket, by
// the kernel's clock, not when the reading goroutine got to run. Frame jitter from these
// stamps is the sender's delivery timing (plus loopback's few microseconds), mostly free
// of the receiving swarm's own scheduling; the relay's bots and the floors' readers are
// measured the same way, so the comparison of their senders is fair.
//
// A stamp belongs to a read, not to a frame: it is the receive time of the last segment
// the read consumed. Only a frame that came alone out of its read has its own arrival
// time. Frames that shared a read came either from a reader a period or more behind or
// from a sender that wrote them back to back (a stall it caught up on): the two cannot
// be told apart, so every interval touching such a frame counts as a full period of
// jitter (arrivals). That never hides a sender's stall, and charges the sender for a
// reader's lag only past a whole period.

package loadtest

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// rxStamp is what a connection's reads leave for its reader: the number of reads that
// returned data, and the kernel's receive time of the last one's bytes (Unix ns; 0 if
// the kernel gave none). One rxStamp serves every connection a swarm connection dials,
// in turn (a reconnecting client dials again). Atomic: besides the reader, a closing
// handshake reads (and stamps) on the goroutine that closes the session.
type rxStamp struct {
	reads atomic.Uint64
	at    atomic.Int64
	conn  atomic.Uint64 // which of the connections dialed read last (1, 2, …); 0: none stamped
	dials atomic.Uint64 // connections dialed
}

// read is the stamp of the newest read: its number (0: no read stamped yet, or no
// stamps on this system) and its receive time (zero if none).
func (s *rxStamp) read() (uint64, time.Time) {
	n, at := s.reads.Load(), s.at.Load()
	if at == 0 {
		return n, time.Time{}
	}
	return n, time.Unix(0, at)
}

// dialFunc dials a connection (net.Dialer.DialContext's shape).
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// stampedDialer dials TCP connections whose reads update st, through dial (nil: a
// plain net.Dialer).
func stampedDialer(st *rxStamp, dial dialFunc) dialFunc {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return stamped(c, st), nil
	}
}

// stampedClient is an HTTP client (for a WebSocket dial) whose connections update st. No
// keep-alive: a connection dialed for a request that gave up is closed, never pooled and
// read in the background.
func stampedClient(st *rxStamp, dial dialFunc) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: stampedDialer(st, dial), DisableKeepAlives: true}}
}

// arrivals turns one connection's frames, each with its read's stamp, into the
// intervals between consecutive frames' arrivals, as |interval − period|. An interval
// is known one frame late: a frame has its own arrival only if neither the frame before
// nor the frame after came out of its read, nor other bytes after it (other). An
// interval touching a frame without its own arrival counts as a whole period; one
// touching a frame whose read had no stamp is left out.
type arrivals struct {
	prev      arrival // the frame before cur, settled
	prevAlone bool
	cur       arrival // the newest frame, not settled yet
	curShared bool    // other bytes came out of cur's read after it
}

type arrival struct {
	read uint64 // 0: none
	at   time.Time
}

// frame records a frame that came out of read number read (0: the system stamps no
// reads), stamped at (zero: not stamped), and returns the interval that ends at the
// frame before it, once that is known.
func (a *arrivals) frame(read uint64, at time.Time, period time.Duration) (us int64, ok bool) {
	if read == 0 {
		return 0, false
	}
	next := arrival{read: read, at: at}
	if a.cur.read == 0 {
		a.cur = next
		return 0, false
	}
	curAlone := !a.curShared && a.cur.read != a.prev.read && a.cur.read != next.read
	if a.prev.read != 0 {
		switch {
		case !a.prevAlone || !curAlone:
			us, ok = period.Microseconds(), true // which of them was late cannot be told
		case !a.prev.at.IsZero() && !a.cur.at.IsZero():
			us, ok = abs(a.cur.at.Sub(a.prev.at)-period).Microseconds(), true
		}
	}
	a.prev, a.prevAlone = a.cur, curAlone
	a.cur, a.curShared = next, false
	return us, ok
}

// other records bytes other than a frame that came out of read number read: if the
// newest frame's read, the frame's stamp is theirs.
func (a *arrivals) other(read uint64) {
	if read != 0 && read == a.cur.read {
		a.curShared = true
	}
}

// reset forgets the frames so far (the connection was replaced, or the stream was not
// live): no interval spans the break.
func (a *arrivals) reset() { *a = arrivals{} }
