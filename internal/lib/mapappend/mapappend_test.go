package mapappend

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pattern returns n bytes that differ from their neighbours and are never all zero.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(1 + (i*7+seed)%251)
	}
	return b
}

func open(t *testing.T, flag int) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|flag, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, path
}

func TestAppendsAcrossWindowsReadBackExactlyAndFinishCutsTheTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag int
	}{{"opened to append", os.O_APPEND}, {"opened plain", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f, path := open(t, tc.flag)
			a := New(f, 0)
			var want []byte
			// Sizes that straddle window edges, and one longer than a window.
			for i, n := range []int{9, 100, Window - 150, 300, 3*Window + 17, 1, Window} {
				p := pattern(n, i)
				got, err := a.Write(p)
				require.NoError(t, err)
				require.Equal(t, n, got)
				want = append(want, p...)
				// Others read what is appended at once, from the page cache.
				back := make([]byte, len(want))
				_, err = f.ReadAt(back, 0)
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, back), "after write %d", i)
			}
			assert.Equal(t, int64(len(want)), a.Size())
			assert.Equal(t, supported, a.Mapped())
			require.NoError(t, a.FellBack())
			require.NoError(t, a.Finish())
			assert.False(t, a.Mapped())
			// Appends after Finish are write calls at the end.
			_, err := a.Write([]byte("end"))
			require.NoError(t, err)
			want = append(want, "end"...)
			require.NoError(t, f.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "file is %d bytes, want %d", len(got), len(want))
		})
	}
}

func TestAnAppenderGoesOnFromTheMiddleOfAPage(t *testing.T) {
	f, path := open(t, os.O_APPEND)
	head := pattern(5000, 3) // not a whole number of pages
	_, err := f.Write(head)
	require.NoError(t, err)
	a := New(f, int64(len(head)))
	tail := pattern(2*Window, 4)
	_, err = a.Write(tail)
	require.NoError(t, err)
	require.NoError(t, a.Finish())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(append(head, tail...), got))
}

func TestAKilledWriterLeavesItsBytesThenZerosAtMostAWindowLong(t *testing.T) {
	if !supported {
		t.Skip("only write calls on " + runtime.GOOS + ": no reserved tail")
	}
	f, path := open(t, os.O_APPEND)
	a := New(f, 0)
	p := pattern(Window+1000, 5)
	_, err := a.Write(p)
	require.NoError(t, err)
	// No Finish: what a killed process leaves (the mapping's bytes are the file's).
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(p, got[:len(p)]))
	tail := got[len(p):]
	assert.Positive(t, len(tail))
	assert.LessOrEqual(t, len(tail), Window)
	assert.Equal(t, make([]byte, len(tail)), tail, "the reserved tail is zeros")
	assert.Zero(t, len(got)%Align, "a file with its reserved tail is a whole number of Align long")
}

func TestAFileCutUnderTheMappingFallsBackToWritesAndLosesNothing(t *testing.T) {
	if !supported {
		t.Skip("only write calls on " + runtime.GOOS)
	}
	f, path := open(t, os.O_APPEND)
	a := New(f, 0)
	first := pattern(100, 6)
	_, err := a.Write(first)
	require.NoError(t, err)
	require.True(t, a.Mapped())
	// Someone cuts the file to its written length: the mapping's next page is past the
	// end, and a copy into it faults (SIGBUS).
	require.NoError(t, os.Truncate(path, int64(len(first))))
	second := pattern(3*pageSize, 7)
	n, err := a.Write(second)
	require.NoError(t, err)
	assert.Equal(t, len(second), n)
	assert.False(t, a.Mapped(), "after a fault, write calls")
	assert.ErrorIs(t, a.FellBack(), errFault)
	third := pattern(10, 8)
	_, err = a.Write(third)
	require.NoError(t, err)
	require.NoError(t, a.Finish())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want := append(append(append([]byte(nil), first...), second...), third...)
	assert.True(t, bytes.Equal(want, got), "file is %d bytes, want %d", len(got), len(want))
}

func TestAFileThatCannotBeMappedIsWrittenWithWriteCalls(t *testing.T) {
	// A pipe has no pages to map: the first append falls back.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	a := New(w, 0)
	done := make(chan error, 1)
	go func() { _, err := a.Write([]byte("hello")); done <- err }()
	buf := make([]byte, 5)
	_, err = r.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(buf))
	require.NoError(t, <-done)
	if supported {
		assert.Error(t, a.FellBack(), "a pipe cannot be grown")
	}
}
