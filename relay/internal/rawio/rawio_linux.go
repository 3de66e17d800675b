//go:build linux && !race

package rawio

import (
	"syscall"
	"unsafe"
)

// On Linux a socket's reads and writes are raw system calls. A normal system call made
// while the process was idle wakes the Go runtime's monitor thread (sysmon), which then
// polls every 20 µs until the process is idle again; a relay wakes for every tick and
// every command, and those wake-ups were about a sixth of its CPU. A raw call skips the
// runtime's syscall entry and exit, which is safe only because the socket is
// non-blocking: the call cannot block, so it never needs its processor handed on.
//
// Under the race detector (rawio_other.go) the calls are the syscall package's, which
// tell the detector about the buffers.

// Read is one read(2) of fd into b, again after EINTR.
func Read(fd uintptr, b []byte) (int, syscall.Errno) { return rawIO(syscall.SYS_READ, fd, b) }

// Write is one write(2) of b to fd, again after EINTR.
func Write(fd uintptr, b []byte) (int, syscall.Errno) { return rawIO(syscall.SYS_WRITE, fd, b) }

// rawIO makes one read or write of b (not empty) on fd, again after EINTR.
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}
