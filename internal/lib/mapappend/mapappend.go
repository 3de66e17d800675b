package mapappend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// Window is how far ahead of the writes the file is mapped and grown: the most a killed
// process can leave as a zero-filled tail.
const Window = 64 << 10

// Appender appends to a file through a mapping of its end. It is not safe for concurrent
// use; others may read the file's appended bytes (ReadAt) at any time.
type Appender struct {
	f      *os.File
	size   int64  // bytes appended: the file's length once the reserved tail is cut
	win    []byte // the mapping of the file's bytes [winOff, winOff+len(win)); nil when none
	winOff int64
	ready  int64 // the window's pages before this offset are faulted in writable
	grown  bool  // the file may be longer than size: a reserved tail follows
	moved  bool  // bytes were copied: f's offset is behind size
	plain  bool  // write calls only: mapping failed, Finish ran, or the platform has none
	why    error // why mapping failed, if it did
	err    error // sticky: the file could not be cut back to size, so no append is safe
}

// New appends to f, whose first size bytes are its content: f is that long, and its
// offset is at its end (or it is opened with O_APPEND).
func New(f *os.File, size int64) *Appender {
	return &Appender{f: f, size: size, plain: !supported}
}

// Size returns the bytes appended so far, with the size New was given.
func (a *Appender) Size() int64 { return a.size }

// Mapped reports whether appends are memory copies (false once they are write calls).
func (a *Appender) Mapped() bool { return !a.plain }

// FellBack returns why appends became write calls when the file could not be grown or
// mapped, or a copy faulted; nil otherwise (while mapped, after Finish, on a platform
// without mapping).
func (a *Appender) FellBack() error { return a.why }

// Write appends p. All of it is in the page cache when Write returns without error.
//
// Its first byte is stored last, after the rest: if the process is killed in the copy,
// the file holds a zero where p starts (see Align). So that a reader can tell, the first
// byte of every p should be non-zero, as a record's tag is.
func (a *Appender) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !a.plain {
		var err error
		if a.win == nil || a.size+int64(len(p)) > a.winOff+int64(len(a.win)) {
			err = a.remap(len(p))
		}
		if err == nil {
			a.prefault(a.size + int64(len(p)))
			if a.copyIn(p) {
				a.size += int64(len(p))
				a.moved = true
				return len(p), nil
			}
			err = errFault
		}
		a.why = err
		if err := a.fallBack(); err != nil {
			return 0, err
		}
	}
	n, err := a.f.Write(p)
	a.size += int64(n)
	return n, err
}

// copyIn stores p at size, its first byte last. A fault in the copy (the file cut under
// the mapping, an I/O error reading a page in) is reported as false.
func (a *Appender) copyIn(p []byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			ok = false
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	w := a.win[a.size-a.winOff:]
	copy(w[1:], p[1:])
	w[0] = p[0]
	return true
}

// remap maps whole windows from the page holding size, enough for n more bytes (so a
// write is one copy), growing the file to their end.
func (a *Appender) remap(n int) error {
	a.unmap()
	off := a.size &^ int64(pageSize-1)
	length := (a.size - off + int64(n) + int64(window) - 1) / int64(window) * int64(window)
	if length > maxMap {
		return errTooLong
	}
	end := off + length
	a.grown = true // even a failed grow may have lengthened the file
	if err := grow(a.f, a.size, end); err != nil {
		return err
	}
	win, err := mapWindow(a.f, off, int(length))
	if err != nil {
		return err
	}
	a.win, a.winOff, a.ready = win, off, off
	return nil
}

// prefault faults in, ahead of the copies, the window's pages up to the one after the
// page holding end: a system call once per page of appends, so that the copies take no
// fault (until writeback cleans a page they write to again).
func (a *Appender) prefault(end int64) {
	if end <= a.ready {
		return
	}
	page := int64(pageSize)
	to := min((end+page-1)/page*page+page, a.winOff+int64(len(a.win)))
	from := max(a.ready, a.winOff)
	prefault(a.win[from-a.winOff : to-a.winOff])
	a.ready = to
}

func (a *Appender) unmap() {
	if a.win != nil {
		unmapWindow(a.win)
		a.win = nil
	}
}

// fallBack ends mapping: the file is cut back to its appended bytes and later appends are
// write calls at its end.
func (a *Appender) fallBack() error {
	a.unmap()
	a.plain = true
	if a.grown {
		// A file no longer than size was not grown (a pipe has no length).
		if fi, err := a.f.Stat(); err != nil || fi.Size() > a.size {
			if err := a.f.Truncate(a.size); err != nil {
				a.err = fmt.Errorf("mapappend: cutting the reserved tail off at byte %d: %w", a.size, err)
				return a.err
			}
		}
		a.grown = false
	}
	if a.moved {
		if _, err := a.f.Seek(a.size, io.SeekStart); err != nil {
			a.err = fmt.Errorf("mapappend: %w", err)
			return a.err
		}
		a.moved = false
	}
	return nil
}

// Finish unmaps the file and cuts its reserved tail off, so it is exactly the appended
// bytes long. The file stays open; later appends are write calls.
func (a *Appender) Finish() error {
	if a.err != nil {
		return a.err
	}
	return a.fallBack()
}

// Align divides the length of a file that has a reserved tail: the tail runs to the end
// of a whole window, which starts at a page boundary, and every Linux page size is a
// multiple of 4096. A relay killed mid-append leaves, where its last append starts, a zero
// byte (its first, stored last), then maybe part of that append, then zeros to a multiple
// of Align. A reader that finds a zero where a record should start in a file of such a
// length may take the file as cut there.
const Align = 4096

// window is Window rounded up to whole pages.
var window = (Window + pageSize - 1) &^ (pageSize - 1)

var pageSize = os.Getpagesize()

// maxMap bounds one mapping: a longer write is made with write calls.
const maxMap = 1 << 30

var (
	errTooLong = errors.New("mapappend: a write too long to map")
	errFault   = errors.New("mapappend: a fault copying into the mapping (the file was cut under it, or an I/O error)")
)
