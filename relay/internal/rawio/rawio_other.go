//go:build unix && (!linux || race)

package rawio

import "syscall"

// Elsewhere, and under the race detector, a socket's reads and writes are the syscall
// package's (see rawio_linux.go for why Linux differs).

// Read is one read(2) of fd into b, again after EINTR.
func Read(fd uintptr, b []byte) (int, syscall.Errno) {
	return errno(func() (int, error) { return syscall.Read(int(fd), b) })
}

// Write is one write(2) of b to fd, again after EINTR.
func Write(fd uintptr, b []byte) (int, syscall.Errno) {
	return errno(func() (int, error) { return syscall.Write(int(fd), b) })
}

// errno makes call, again after EINTR, and returns its count and error number.
func errno(call func() (int, error)) (int, syscall.Errno) {
	for {
		n, err := call()
		switch e := err.(type) {
		case nil:
			return n, 0
		case syscall.Errno:
			if e != syscall.EINTR {
				return max(n, 0), e
			}
		default:
			return max(n, 0), syscall.EIO // the syscall package returns only Errno
		}
	}
}
