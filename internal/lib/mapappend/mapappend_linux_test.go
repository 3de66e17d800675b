//go:build linux && !race

// Under the race detector its shadow memory takes page faults of its own (make test runs
// this package again without it).

package mapappend

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The pages an append will copy into are faulted in ahead, in a system call: the copies
// themselves take no page fault, which would hold the runtime's processor.
func TestCopiesIntoPrefaultedPagesTakeNoPageFault(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	err = unix.Madvise(probe, unix.MADV_POPULATE_WRITE)
	_ = unix.Munmap(probe)
	if errors.Is(err, unix.EINVAL) {
		t.Skip("MADV_POPULATE_WRITE needs Linux 5.14")
	}
	require.NoError(t, err)

	f, _ := open(t, os.O_APPEND)
	a := New(f, 0)
	_, err = a.Write([]byte{1}) // maps the window and faults in this page and the next
	require.NoError(t, err)
	p := pattern(64, 9)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	require.NoError(t, unix.Getrusage(unix.RUSAGE_THREAD, &before))
	for a.Size()+int64(len(p)) <= int64(2*pageSize) { // into the second page, no further
		if _, err := a.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	require.NoError(t, unix.Getrusage(unix.RUSAGE_THREAD, &after))
	require.True(t, a.Mapped())
	require.Zero(t, after.Minflt-before.Minflt, "page faults in the copies")
}
