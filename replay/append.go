package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// ErrFinished means a replay file already has its end record: it is never written again.
var ErrFinished = errors.New("replay: the file is finished (it has its end record)")

// Reopened is an unfinished replay file opened to append to.
type Reopened struct {
	// File is the open file, positioned at its end.
	File *os.File
	opts WriterOptions
	// Replay is what the file held.
	Replay *Replay
	// Bytes are the file's bytes (whole records only).
	Bytes []byte
	// Repaired is how many bytes of an incomplete last record were cut off.
	Repaired int64
	// Reserved is how many zero bytes after the last record were cut off: space the
	// killed relay had reserved ahead of its writes (TruncatedError.Reserved).
	Reserved int64
}

// Reopen opens the unfinished replay file at path (a relay killed mid-match left it) to
// go on appending to it. A torn last record, whose writer died mid-write, is cut off
// first (it was never whole, so no reader ever accepted it), and so is a zero-filled tail
// the writer had reserved. A finished file is refused with ErrFinished (a reserved tail
// after its end record cut off first), a file of nothing but zeros with ErrUnwritten, a
// corrupt one with its *CorruptError. Its errors do not name the file: the caller does,
// once.
func Reopen(path string, opts *WriterOptions) (*Reopened, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("replay: opening it: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("replay: reading it: %w", err)
	}
	if firstNonZero(b) < 0 {
		return nil, ErrUnwritten
	}
	rp, err := Load(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	if rp.Cut == nil || rp.End != nil {
		if rp.End != nil && rp.Size < int64(len(b)) {
			// Zeros after the end record: a relay killed before cutting off the tail it
			// had reserved. The file is finished; it loses only them.
			if err := f.Truncate(rp.Size); err != nil {
				return nil, fmt.Errorf("replay: cutting the reserved tail after the end record off at byte %d: %w", rp.Size, err)
			}
		}
		return nil, ErrFinished
	}
	out := &Reopened{Replay: rp}
	if whole := rp.Cut.Offset; whole < int64(len(b)) {
		if err := f.Truncate(whole); err != nil {
			return nil, fmt.Errorf("replay: cutting the torn last record or reserved tail off at byte %d: %w", whole, err)
		}
		out.Repaired, out.Reserved = rp.Cut.Partial, rp.Cut.Reserved
		b = b[:whole]
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	out.Bytes = b
	o := opts.withDefaults()
	if opts == nil || opts.IdleFlush == 0 {
		if n := rp.Start.GetIdleFlush(); n > 0 {
			o.IdleFlush = uint64(n)
		}
	}
	out.File, out.opts = f, o
	ok = true
	return out, nil
}

// Writer returns a Writer that goes on with the stream, writing to dst: the File, or a
// writer that wraps it (a relay keeps the stream in memory too). The end record's index
// covers only what is written from here on.
func (r *Reopened) Writer(dst io.Writer) *Writer {
	rp := r.Replay
	// The first frame is a whole one: the seq bases of packed records are not kept across
	// a crash. A version 1 file (no packed records) stays version 1 throughout.
	// A version 3 file's last block (after its last crc record, the one the writer was
	// killed in) goes on: its sum starts from the bytes already there.
	w := &Writer{dst: dst, opts: r.opts, start: rp.Start, size: int64(len(r.Bytes)),
		next: rp.Ticks, written: rp.Ticks, nextIndex: rp.Ticks + r.opts.IndexEvery,
		packed: rp.Version >= 2, anchor: true, pack: stream.NewPacker(len(rp.Start.GetPlayers())),
		crc: rp.Version >= stream.CRCVersion, started: rp.Started}
	if w.crc {
		w.block.Add(r.Bytes[rp.Checked:])
	}
	return w
}

// SkipTo records every tick from the next one up to (not including) first as sealed
// empty, at once: a relay resuming a match from its file starts sealing at first.
func (w *Writer) SkipTo(first uint64) error {
	if w.err != nil {
		return w.err
	}
	if first < w.next {
		return fmt.Errorf("%w: cannot skip back to tick %d, the stream is at tick %d", ErrOrder, first, w.next)
	}
	w.next = first
	return w.FlushIdle()
}

// Start returns the stream's Start record.
func (w *Writer) Start() *pb.Start { return w.start }
