//go:build unix

package relay

import "syscall"

const nonBlockingWrites = true

// tryWrite makes one non-blocking write of b and returns how many bytes the socket took
// (0 when its buffer is full). mu is held.
func (r *rawConn) tryWrite(b []byte) (int, error) {
	var n int
	var werr error
	if err := r.sc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // one attempt: never wait for the socket here
	}); err != nil {
		return 0, err
	}
	n = max(n, 0)
	if werr == syscall.EAGAIN || werr == syscall.EINTR {
		return n, nil
	}
	return n, werr
}
