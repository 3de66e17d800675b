package wsconn

import (
	"net"
	"sync"
	"syscall"
)

// Conn is a connection under the WebSocket library, written by two writers: the library
// (through Write: its control frames, the closing handshake and the messages it frames)
// and the relay (WriteLocked, TryWriteLocked: messages framed by AppendBinary). Each
// writes whole frames under the one lock, so they never interleave. When a non-blocking
// write leaves part of a frame unwritten, that part is kept, and whoever takes the lock
// next writes it first, before anything of its own: the frame is finished before any
// other byte follows it. Where the platform allows, every read and write is a raw system
// call (raw_unix.go).
type Conn struct {
	net.Conn
	sc    syscall.RawConn // nil: no raw reads or writes (TryWriteLocked unavailable)
	calls rawCalls        // sc's callbacks (raw_unix.go)
	mu    sync.Mutex
	rest  []byte // the unwritten end of a frame a non-blocking write cut
	// dead: the connection is closing (the library wrote its close frame) or its owner
	// said so (Kill); nothing is written directly any more.
	dead bool
}

// New wraps c.
func New(c net.Conn) *Conn {
	r := &Conn{Conn: c}
	if s, ok := c.(syscall.Conn); ok && nonBlockingWrites {
		if sc, err := s.SyscallConn(); err == nil {
			r.sc = sc
			r.calls.init()
		}
	}
	return r
}

// Read is how the library reads the connection.
func (c *Conn) Read(p []byte) (int, error) {
	if c.sc == nil {
		return c.Conn.Read(p)
	}
	return c.rawRead(p)
}

// Write is how the library writes the connection (its buffered writer flushes into it):
// under the lock, after the rest of a cut frame.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) > 0 && p[0] == CloseFrame {
		// The library closes the connection (answering the peer's close, or on a
		// protocol error): nothing may follow. A chunk of a larger message that happens
		// to start with this byte only turns direct writes off, which is safe.
		c.dead = true
	}
	if err := c.WriteLocked(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Lock takes the connection for direct writes (WriteLocked, TryWriteLocked, Idle).
func (c *Conn) Lock() { c.mu.Lock() }

// TryLock takes the lock if no one holds it.
func (c *Conn) TryLock() bool { return c.mu.TryLock() }

// Unlock gives the lock back.
func (c *Conn) Unlock() { c.mu.Unlock() }

// NonBlocking reports whether TryWriteLocked can write (raw writes on this platform and
// connection).
func (c *Conn) NonBlocking() bool { return c.sc != nil }

// Idle reports whether a direct write may start now: no cut frame waits to be finished
// and the connection is not dead. The lock is held.
func (c *Conn) Idle() bool { return len(c.rest) == 0 && !c.dead }

// Kill stops direct writes for good (the owner's writer ended).
func (c *Conn) Kill() {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
}

// WriteLocked writes the rest of a cut frame, then p (whole frames), blocking until both
// are written or the connection fails. The lock is held.
func (c *Conn) WriteLocked(p []byte) error {
	if len(c.rest) > 0 {
		err := c.writeAll(c.rest)
		c.rest = nil
		if err != nil {
			return err
		}
	}
	if len(p) == 0 {
		return nil
	}
	return c.writeAll(p)
}

// TryWriteLocked makes one non-blocking write of p (whole frames; the connection Idle)
// and keeps what the socket did not take as the rest for the next writer: cut says so.
// The lock is held; NonBlocking is true.
func (c *Conn) TryWriteLocked(p []byte) (cut bool, err error) {
	if len(p) == 0 {
		return false, nil
	}
	n, err := c.tryWrite(p)
	if err != nil {
		return false, err
	}
	if n < len(p) {
		c.rest = append([]byte(nil), p[n:]...)
		return true, nil
	}
	return false, nil
}

// writeAll writes all of p, waiting while the socket is full; the lock is held.
func (c *Conn) writeAll(p []byte) error {
	if c.sc == nil {
		_, err := c.Conn.Write(p)
		return err
	}
	return c.rawWriteAll(p)
}
