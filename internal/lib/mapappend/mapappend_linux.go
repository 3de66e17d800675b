//go:build linux

package mapappend

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const supported = true

// grow makes f at least end bytes long, allocating the blocks from size on where the
// file system can (so a full disk fails here, not in a copy).
func grow(f *os.File, size, end int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, size, end-size)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return f.Truncate(end)
		}
		return err
	}
}

func mapWindow(f *os.File, off int64, n int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), off, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapWindow(b []byte) { _ = unix.Munmap(b) }

// prefault faults the pages of b in writable (MADV_POPULATE_WRITE, Linux 5.14 on): in a
// system call, where the runtime hands the processor on if the kernel blocks (on
// dirty-page throttling, say), rather than in a copy, where a fault would hold it. Best
// effort: on an older kernel (EINVAL) the copies take the faults.
func prefault(b []byte) { _ = unix.Madvise(b, unix.MADV_POPULATE_WRITE) }
