//go:build linux && !race

package relay

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

func sysRead(fd uintptr, b []byte) (int, syscall.Errno)  { return rawIO(syscall.SYS_READ, fd, b) }
func sysWrite(fd uintptr, b []byte) (int, syscall.Errno) { return rawIO(syscall.SYS_WRITE, fd, b) }

// rawIO makes one read or write of b (not empty) on fd, again after EINTR.
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}
