// The connection's byte stream, shared by the WebSocket library and the relay's own
// pre-framed writes, and the one non-blocking write the match actor may make on it. Where
// the platform allows, every read and write is a raw system call (rawconn_unix.go).

package relay

import (
	"net"
	"sync"
	"syscall"
)

// rawConn is a connection under its WebSocket library, written by two writers: the
// library (control frames: pongs, the close frame; and the messages the session's writer
// hands it) and the relay's pre-framed messages. Each writes whole frames under mu, so
// they never interleave. When the match actor's non-blocking write leaves part of a
// frame unwritten, that part is rest, and whoever takes mu next writes it first, before
// anything of its own: the frame is finished before any other byte follows it.
type rawConn struct {
	net.Conn
	sc    syscall.RawConn // nil: no raw reads or writes (deliver always queues)
	calls rawCalls        // sc's callbacks (rawconn_unix.go)
	mu    sync.Mutex
	rest  []byte // the unwritten end of a frame the actor wrote in part
	// dead: the connection is closing (a close frame was written) or the session's
	// writer ended; nothing is written to it directly any more.
	dead bool
}

func newRawConn(c net.Conn) *rawConn {
	r := &rawConn{Conn: c}
	if s, ok := c.(syscall.Conn); ok && nonBlockingWrites {
		if sc, err := s.SyscallConn(); err == nil {
			r.sc = sc
			r.calls.init()
		}
	}
	return r
}

// write writes p after the rest of a frame cut earlier, blocking until both are written
// or the connection fails; mu is held.
func (r *rawConn) write(p []byte) error {
	if len(r.rest) > 0 {
		err := r.writeAll(r.rest)
		r.rest = nil
		if err != nil {
			return err
		}
	}
	if len(p) == 0 {
		return nil
	}
	return r.writeAll(p)
}

// writeAll writes all of p, waiting while the socket is full; mu is held.
func (r *rawConn) writeAll(p []byte) error {
	if r.sc == nil {
		_, err := r.Conn.Write(p)
		return err
	}
	return r.rawWriteAll(p)
}

// Read is how the library reads the connection (Hijack hands it r).
func (r *rawConn) Read(p []byte) (int, error) {
	if r.sc == nil {
		return r.Conn.Read(p)
	}
	return r.rawRead(p)
}

// libWriter is what the library's buffered writer writes through.
type libWriter struct{ c *rawConn }

func (w libWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if len(p) > 0 && p[0] == closeFrame {
		// The library closes the connection (answering the peer's close, or on a
		// protocol error): nothing may follow. A chunk of a larger message that happens
		// to start with this byte only turns direct writes off, which is safe.
		w.c.dead = true
	}
	if err := w.c.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// closeFrame is the first byte of a server's close frame (RFC 6455 5.2: FIN, opcode 8),
// which the library writes, as every control frame, in one flush of its own.
const closeFrame = 0x88
