// Kernel receive times: what a connection's reads returned arrived at the socket when,
// by the kernel's clock, not when the reading goroutine got to run. Frame jitter from
// these stamps is the sender's delivery timing (plus loopback's few microseconds), free of
// the receiving swarm's own scheduling; the relay's bots and the floors' readers are
// measured the same way, so the comparison of their senders is fair.

package loadtest

import (
	"context"
	"net"
	"net/http"
	"time"
)

// rxStamp is the kernel's receive time of the bytes a connection's last Read returned;
// zero where the system has no such stamps (then only the readers' own clocks count).
type rxStamp struct{ at time.Time }

// time is the stamp; zero for a connection not dialed through stampedDialer.
func (s *rxStamp) time() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.at
}

// stampedDialer dials TCP connections that stamp their reads, telling onDial each one's
// stamp (a reconnecting client dials again: the newest connection's stamp is the one).
func stampedDialer(onDial func(*rxStamp)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, st := stamped(c)
		onDial(st)
		return sc, nil
	}
}

// stampedClient is an HTTP client (for a WebSocket dial) whose connections stamp their
// reads.
func stampedClient(onDial func(*rxStamp)) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: stampedDialer(onDial)}}
}

// jitterFrom is |interval since *last − period| in µs, recording at as the new *last;
// ok is false for the first stamp, or none. (The kernel stamps a connection's first
// segments only once it has turned its stamping on, a moment after the first socket
// asks: an unstamped frame breaks the chain rather than count two periods as one.)
func jitterFrom(last *time.Time, at time.Time, period time.Duration) (us int64, ok bool) {
	prev := *last
	*last = at
	if prev.IsZero() || at.IsZero() {
		return 0, false
	}
	return abs(at.Sub(prev) - period).Microseconds(), true
}
