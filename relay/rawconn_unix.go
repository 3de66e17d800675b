//go:build unix

package relay

import (
	"io"
	"syscall"
	"unsafe"
)

// The relay's reads and writes on a connection are raw system calls, made through the
// connection's syscall.RawConn: the socket is non-blocking, so no call can block (a full
// or empty socket answers EAGAIN, and the RawConn then waits on the poller as the
// connection's own Read and Write would). A raw call skips the runtime's syscall entry
// and exit, and so never wakes the runtime's monitor thread (sysmon): each entry into a
// system call while the process was idle wakes sysmon and starts it polling every 20 µs
// for the next millisecond. On a relay, which wakes for every tick and every command,
// those wake-ups were a context switch or more per command, about a sixth of its CPU.
const nonBlockingWrites = true

// sysIO makes one read or write system call on fd, again after EINTR.
func sysIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// tryWrite makes one non-blocking write of b and returns how many bytes the socket took
// (0 when its buffer is full). mu is held.
func (r *rawConn) tryWrite(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var e syscall.Errno
	if err := r.sc.Write(func(fd uintptr) bool {
		n, e = sysIO(syscall.SYS_WRITE, fd, b)
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
			n, e := sysIO(syscall.SYS_WRITE, fd, b)
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
		n, e = sysIO(syscall.SYS_READ, fd, p)
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
