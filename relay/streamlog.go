package relay

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/tickrelay/tickrelay/internal/lib/mapappend"
	"github.com/tickrelay/tickrelay/relay/internal/hooks"
)

// streamLog is a match's stream: exactly the replay file's bytes. The file is the store
// (a temporary, already unlinked file when the relay does not record); memory holds only
// the tail that spectators have not been sent yet, so a long match costs disk, not heap.
// Players catching up and spectators joining late read their past from the file.
//
// Bytes once written never change, so slices of the tail are shared with connection
// writers without copying; trimming the tail allocates a new one rather than reuse it.
type streamLog struct {
	file *fileRef // nil only when no file could be had: then memory holds everything
	temp bool     // the file is a temporary one (not recording): never synced
	// app appends to the file: a memory copy into a mapping of its end, so that a tick
	// costs no system call (see internal/lib/mapappend; the bytes are in the page cache, as
	// after a write, and a killed relay leaves a zero-filled tail the readers cut off).
	app  *mapappend.Appender
	size int // bytes written
	base int // tail holds bytes [base, size)
	tail []byte
	hold bool // keep a tail (spectators are watching, or there is no file)
	// copy, in a cluster, gets every write first (Cluster.Record): bytes reach the file,
	// and so any socket, only once the cluster has them.
	copy io.Writer
	// tap tells the match's webhook sender what is written (backend.go); nil: none.
	tap *hooks.Tap
}

// fileRef shares the stream's file between the match and the connection writers that
// read catch-up ranges from it; the last one to let go closes it.
type fileRef struct {
	f    *os.File
	refs atomic.Int32
}

func newFileRef(f *os.File) *fileRef {
	r := &fileRef{f: f}
	r.refs.Store(1)
	return r
}

func (r *fileRef) acquire() *fileRef { r.refs.Add(1); return r }

func (r *fileRef) release() {
	if r.refs.Add(-1) == 0 {
		_ = r.f.Close()
	}
}

// openStream starts a stream on f (the replay file, positioned at its end, size bytes
// long), or on a new, empty temporary file when f is nil.
func openStream(f *os.File, size int) (streamLog, error) {
	if f == nil {
		tmp, err := os.CreateTemp("", "tickrelay-stream-*.tkr")
		if err != nil {
			return streamLog{hold: true}, fmt.Errorf("relay: a temporary file for the stream: %w", err)
		}
		// Unlinked at once: the open handle keeps it, and nothing is left behind.
		_ = os.Remove(tmp.Name())
		return streamLog{file: newFileRef(tmp), app: mapappend.New(tmp, 0), temp: true}, nil
	}
	return streamLog{file: newFileRef(f), app: mapappend.New(f, int64(size)), size: size, base: size}, nil
}

func (l *streamLog) Write(p []byte) (int, error) {
	if l.copy != nil {
		if _, err := l.copy.Write(p); err != nil {
			return 0, err
		}
	}
	if l.file != nil {
		if n, err := l.app.Write(p); err != nil {
			// The file may now end in part of a record (Reopen cuts it off); the stream
			// counts whole records only.
			return n, err
		}
	}
	l.size += len(p)
	if l.hold || l.file == nil {
		l.tail = append(l.tail, p...)
	} else {
		l.base = l.size
	}
	if l.tap != nil {
		l.tap.Wrote(int64(l.size), p)
	}
	return len(p), nil
}

// appendMemory adds bytes for the spectators that the file could not take (an end
// record after a write error).
func (l *streamLog) appendMemory(p []byte) {
	if !l.hold {
		l.tail, l.base, l.hold = nil, l.size, true
	}
	l.tail = append(l.tail, p...)
	l.size += len(p)
}

// Close is the replay writer's: it cuts the file's reserved tail off and syncs it (the
// writer's SyncOnClose: streamLog has no Sync method, so the writer leaves the one fsync,
// after the cut, to Close; a temporary file is not synced), but the file stays open for
// the readers still queued; the match releases it when it is done (release).
func (l *streamLog) Close() error {
	if l.file == nil {
		return nil
	}
	if err := l.app.Finish(); err != nil {
		return err
	}
	if l.temp {
		return nil
	}
	return l.file.f.Sync()
}

// release lets go of the match's hold on the file and memory. A file left unfinished (a
// relay stopping mid-match, to resume it later) is cut to its bytes too; if that fails,
// the error says so, and the file keeps a zero-filled tail that readers take for its end.
func (l *streamLog) release() error {
	var err error
	if l.tap != nil {
		l.tap.Close() // nothing more is written
		l.tap = nil
	}
	if l.file != nil {
		err = l.app.Finish()
		l.file.release()
		l.file, l.app = nil, nil
	}
	l.tail, l.hold = nil, false
	return err
}

// setHold starts or stops keeping a tail in memory (from now on).
func (l *streamLog) setHold(hold bool) {
	if l.file == nil || l.hold == hold {
		return
	}
	l.hold, l.tail, l.base = hold, nil, l.size
}

// trim forgets the tail before keep. It copies the rest into a new array when that frees
// at least 64 KiB, or drops the array when nothing is left.
func (l *streamLog) trim(keep int) {
	if l.file == nil || keep <= l.base {
		return
	}
	keep = min(keep, l.size)
	switch {
	case keep == l.size:
		l.tail, l.base = nil, keep
	case keep-l.base >= 64<<10:
		l.tail, l.base = append([]byte(nil), l.tail[keep-l.base:]...), keep
	}
}

// message returns a queueable message for stream bytes [from, to): a slice of the tail
// when memory has them, else a range the connection's writer reads from the file.
func (l *streamLog) message(from, to int) *message {
	var m *message
	if from >= l.base || l.file == nil {
		m = oneOff(l.tail[from-l.base : to-l.base : to-l.base])
	} else {
		m = oneOff(nil)
		m.src, m.from, m.to = l.file.acquire(), int64(from), int64(to)
	}
	m.stream = true
	return m
}

// read returns stream bytes [from, to), from memory or the file.
func (l *streamLog) read(from, to int) ([]byte, error) {
	if from >= l.base || l.file == nil {
		return l.tail[from-l.base : to-l.base], nil
	}
	b := make([]byte, to-from)
	if _, err := l.file.f.ReadAt(b, int64(from)); err != nil {
		return nil, err
	}
	return b, nil
}
