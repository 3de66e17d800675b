//go:build unix

package wsconn

import (
	"io"
	"syscall"

	"github.com/tickrelay/tickrelay/relay/internal/rawio"
)

// The relay's reads and writes on a connection go through the connection's
// syscall.RawConn: the socket is non-blocking, so a full or empty socket answers EAGAIN,
// and the RawConn then waits on the poller as the connection's own Read and Write would.
// On Linux the calls themselves are raw (package relay/internal/rawio), to keep the
// runtime's monitor thread asleep.
const nonBlockingWrites = true

// rawCalls are a connection's callbacks for its syscall.RawConn, made once with the
// connection: a closure handed to the RawConn escapes, so one made per call allocated
// twice per frame. Their arguments and results are fields: the write side's under the
// connection's mu, the read side's the reader goroutine's alone.
type rawCalls struct {
	wb       []byte // what is left to write
	wn       int    // how much a single attempt wrote
	we       syscall.Errno
	writeOne func(uintptr) bool // one attempt, never waiting
	writeAll func(uintptr) bool // until wb is written, waiting while the socket is full

	rb   []byte
	rn   int
	re   syscall.Errno
	read func(uintptr) bool // waits until the socket has bytes
}

func (c *rawCalls) init() {
	c.writeOne = func(fd uintptr) bool {
		c.wn, c.we = rawio.Write(fd, c.wb)
		return true
	}
	c.writeAll = func(fd uintptr) bool {
		for len(c.wb) > 0 {
			n, e := rawio.Write(fd, c.wb)
			switch e {
			case 0:
				c.wb = c.wb[n:]
			case syscall.EAGAIN:
				return false // wait until the socket takes more
			default:
				c.we = e
				return true
			}
		}
		return true
	}
	c.read = func(fd uintptr) bool {
		c.rn, c.re = rawio.Read(fd, c.rb)
		return c.re != syscall.EAGAIN
	}
}

// tryWrite makes one non-blocking write of b and returns how many bytes the socket took
// (0 when its buffer is full). the lock is held.
func (c *Conn) tryWrite(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	k := &c.calls
	k.wb, k.wn, k.we = b, 0, 0
	err := c.sc.Write(k.writeOne)
	k.wb = nil
	switch {
	case err != nil:
		return 0, err
	case k.we == 0:
		return k.wn, nil
	case k.we == syscall.EAGAIN:
		return 0, nil
	default:
		return 0, k.we
	}
}

// rawWriteAll writes all of b, waiting while the socket is full; the lock is held.
func (c *Conn) rawWriteAll(b []byte) error {
	k := &c.calls
	k.wb, k.we = b, 0
	err := c.sc.Write(k.writeAll)
	k.wb = nil
	if err != nil {
		return err
	}
	if k.we != 0 {
		return k.we
	}
	return nil
}

// rawRead reads into p, waiting until the socket has bytes, as the connection's Read
// does.
func (c *Conn) rawRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	k := &c.calls
	k.rb, k.rn, k.re = p, 0, 0
	err := c.sc.Read(k.read)
	k.rb = nil
	switch {
	case err != nil:
		return 0, err
	case k.re != 0:
		return 0, k.re
	case k.rn == 0:
		return 0, io.EOF
	}
	return k.rn, nil
}
