//go:build unix

package relay

import (
	"io"
	"syscall"
)

// The relay's reads and writes on a connection go through the connection's
// syscall.RawConn: the socket is non-blocking, so a full or empty socket answers EAGAIN,
// and the RawConn then waits on the poller as the connection's own Read and Write would.
// On Linux the calls themselves are raw (rawio_linux.go), to keep the runtime's monitor
// thread asleep.
const nonBlockingWrites = true

// tryWrite makes one non-blocking write of b and returns how many bytes the socket took
// (0 when its buffer is full). mu is held.
func (r *rawConn) tryWrite(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var e syscall.Errno
	if err := r.sc.Write(func(fd uintptr) bool {
		n, e = sysWrite(fd, b)
		return true // one attempt: never wait for the socket here
	}); err != nil {
		return 0, err
	}
	switch e {
	case 0:
		return n, nil
	case syscall.EAGAIN:
		return 0, nil
	default:
		return 0, e
	}
}

// rawWriteAll writes all of b, waiting while the socket is full; mu is held.
func (r *rawConn) rawWriteAll(b []byte) error {
	var werr error
	if err := r.sc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, e := sysWrite(fd, b)
			switch e {
			case 0:
				b = b[n:]
			case syscall.EAGAIN:
				return false // wait until the socket takes more
			default:
				werr = e
				return true
			}
		}
		return true
	}); err != nil {
		return err
	}
	return werr
}

// rawRead reads into p, waiting until the socket has bytes, as the connection's Read
// does.
func (r *rawConn) rawRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var e syscall.Errno
	if err := r.sc.Read(func(fd uintptr) bool {
		n, e = sysRead(fd, p)
		return e != syscall.EAGAIN // wait until it is readable
	}); err != nil {
		return 0, err
	}
	switch {
	case e != 0:
		return 0, e
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
