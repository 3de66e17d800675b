// The connection's byte stream, shared by the WebSocket library and the relay's own
// pre-framed writes, and the one non-blocking write the match actor may make on it.

package relay

import (
	"net"
	"sync"
	"syscall"
)

// rawConn is a connection under its WebSocket library, written by two writers: the
// library (control frames: pongs, the close frame; and the messages the session's writer
// hands it) and the relay's pre-framed messages. Each writes whole frames under mu, so
// they never interleave — also across a frame the match actor wrote only in part, whose
// rest the session's writer finishes (partial is set until then; the library waits).
type rawConn struct {
	net.Conn
	sc      syscall.RawConn // nil: no non-blocking writes (deliver always queues)
	mu      sync.Mutex
	done    *sync.Cond // broadcast when partial is cleared
	partial bool
}

func newRawConn(c net.Conn) *rawConn {
	r := &rawConn{Conn: c}
	r.done = sync.NewCond(&r.mu)
	if s, ok := c.(syscall.Conn); ok && nonBlockingWrites {
		if sc, err := s.SyscallConn(); err == nil {
			r.sc = sc
		}
	}
	return r
}

// finish clears partial once the rest of a partly written frame is written or will never
// be (the connection failed or ended); mu is held.
func (r *rawConn) finish() {
	if r.partial {
		r.partial = false
		r.done.Broadcast()
	}
}

// libWriter is what the library's buffered writer writes through: it waits for a
// partly written frame to be finished before it writes.
type libWriter struct{ c *rawConn }

func (w libWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	for w.c.partial {
		w.c.done.Wait()
	}
	return w.c.Conn.Write(p)
}
