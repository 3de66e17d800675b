//go:build linux

package mapappend

import (
	"errors"
	"os"
	"syscall"
)

const supported = true

// grow makes f at least end bytes long, allocating the blocks from size on where the
// file system can (so a full disk fails here, not in a copy).
func grow(f *os.File, size, end int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, size, end-size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		err = f.Truncate(end)
	}
	return err
}

func mapWindow(f *os.File, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), off, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func unmapWindow(b []byte) { _ = syscall.Munmap(b) }
