package replay

import (
	"fmt"
	"io"
	"os"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// Writer defaults, documented where they are defined.
const (
	// DefaultMaxBytes caps a file at 256 MiB (a 4-player match at 30 Hz writes well under
	// 1 MiB an hour).
	DefaultMaxBytes = 256 << 20
	// DefaultIdleFlush: a run of empty ticks is written at least every 1024 ticks (34 s at
	// 30 Hz), so an idle stretch costs about 6 bytes per 1024 ticks. Ticks missing from a
	// file cut by a crash were always empty ones, and at most IdleFlush-1 of them: a
	// relay resuming from the file may seal that many more ticks empty without ever
	// contradicting a frame a client saw.
	DefaultIdleFlush = 1024
	// DefaultIndexEvery: the end record indexes the file every 4096 ticks.
	DefaultIndexEvery = 4096
)

// SyncPolicy says when a Writer asks the OS to put written bytes on disk (fsync).
// Every record is always written to the OS at once, which is enough to survive a crash
// of the process; fsync is what survives a crash of the machine.
type SyncPolicy int

const (
	// SyncOnClose fsyncs once, when the file is closed (the default).
	SyncOnClose SyncPolicy = iota
	// SyncNever never fsyncs.
	SyncNever
	// SyncEveryRecord fsyncs after every write (slow: milliseconds each on most disks).
	SyncEveryRecord
)

// WriterOptions configure a Writer. The zero value means every default.
type WriterOptions struct {
	// MaxBytes caps the file size; a write that would pass it fails with ErrTooLarge and
	// writes nothing. The end record may pass it. Default DefaultMaxBytes.
	MaxBytes int64
	// IdleFlush is the longest run of empty ticks kept unwritten, in ticks.
	// Default DefaultIdleFlush.
	IdleFlush uint64
	// IndexEvery is the tick spacing of the end record's index. Default DefaultIndexEvery.
	IndexEvery uint64
	// Sync is the fsync policy (used when the destination has a Sync method, as *os.File
	// does). Default SyncOnClose.
	Sync SyncPolicy
	// Lobby makes NewWriter leave the match in its lobby: events may be recorded, ticks
	// not until Begin writes the started event. By default NewWriter writes it at once.
	Lobby bool
}

func (o *WriterOptions) withDefaults() WriterOptions {
	out := WriterOptions{}
	if o != nil {
		out = *o
	}
	if out.MaxBytes <= 0 {
		out.MaxBytes = DefaultMaxBytes
	}
	if out.IdleFlush == 0 {
		out.IdleFlush = DefaultIdleFlush
	}
	if out.IndexEvery == 0 {
		out.IndexEvery = DefaultIndexEvery
	}
	return out
}

// Writer appends a match's stream to a replay file as it is sealed. Each method writes its
// record (and any pending run of empty ticks before it) to the destination in one Write
// call before it returns; errors are sticky. A Writer is not safe for concurrent use: the
// match actor owns it.
type Writer struct {
	dst   io.Writer
	opts  WriterOptions
	size  int64
	buf   []byte
	err   error
	start *pb.Start

	next      uint64 // the next tick the stream expects
	written   uint64 // ticks < written are in the file
	index     []*pb.IndexEntry
	nextIndex uint64

	// Frames with commands are packed records, except where a reader may start (an
	// index entry, an anchor the caller asked for): there they are whole Frames.
	packed bool          // the format has packed records (a file reopened from version 1 does not)
	anchor bool          // the next tick record must be a frame or idle record
	pack   stream.Packer // codes the tick records

	// Blocks (format version 3): a crc record ends each. block sums the current block's
	// bytes already written; those in buf start at buf[blockFrom:].
	crc       bool
	block     stream.Block
	blockFrom int
	started   bool // the started event is written (always, before version 3)
}

// Create creates a new replay file at path (it must not exist: a finished match's file is
// never rewritten) and writes its header.
func Create(path string, start *pb.Start, opts *WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("replay: create: %w", err)
	}
	w, err := NewWriter(f, start, opts)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return w, nil
}

// NewWriter writes the file header (magic, format version) and the Start record to dst
// and returns a Writer for the rest of the stream. It sets start.IdleFlush to the writer's.
// If dst is an io.Closer, Close closes it.
func NewWriter(dst io.Writer, start *pb.Start, opts *WriterOptions) (*Writer, error) {
	if start == nil || start.GetSimName() == "" {
		return nil, fmt.Errorf("replay: a replay needs a Start record naming the sim")
	}
	if len(start.GetPlayers()) == 0 {
		return nil, fmt.Errorf("replay: a replay needs a Start record with at least one player (a reader refuses one with none)")
	}
	w := &Writer{dst: dst, opts: opts.withDefaults(), start: start, packed: true, crc: true,
		pack: stream.NewPacker(len(start.GetPlayers()))}
	// The file says how far a crash can leave it behind (see Start.idle_flush).
	start.IdleFlush = uint32(min(w.opts.IdleFlush, 1<<31))
	w.buf = AppendHeader(w.buf)
	w.blockFrom = len(w.buf) // the header is in no block
	var err error
	w.buf, err = stream.AppendRecord(w.buf, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: start}})
	if err != nil {
		return nil, err
	}
	w.endBlock() // a reader believes the start record before anything else
	if !w.opts.Lobby {
		if w.buf, err = stream.AppendRecord(w.buf, startedEvent); err != nil {
			return nil, err
		}
		w.started = true
	}
	if err := w.flush(false); err != nil {
		return nil, err
	}
	return w, nil
}

var startedEvent = &pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: pb.Event_KIND_STARTED}}}

// Begin records that the match left its lobby (the started event): ticks may follow.
// NewWriter calls it unless WriterOptions.Lobby is set.
func (w *Writer) Begin() error {
	if w.started {
		return fmt.Errorf("%w: the match already started", ErrOrder)
	}
	if err := w.Record(startedEvent); err != nil {
		return err
	}
	w.started = true
	return nil
}

// Started reports whether the match left its lobby (Begin).
func (w *Writer) Started() bool { return w.started }

// Size returns the bytes written so far.
func (w *Writer) Size() int64 { return w.size }

// Covered returns how many ticks the bytes written so far cover: every tick before it is
// in the file (the pending run of empty ticks is not).
func (w *Writer) Covered() uint64 { return w.written }

// NextTick returns the tick the next Frame must have.
func (w *Writer) NextTick() uint64 { return w.next }

// Frame records the sealed tick f, which must be the next tick, its commands in canonical
// order (as lockstep.Schedule seals them). An empty frame only extends the pending run of
// empty ticks, written when it reaches IdleFlush ticks or before the next other record.
func (w *Writer) Frame(f lockstep.Frame) error {
	if len(f.Commands) == 0 {
		return w.Empty(f.Tick)
	}
	if err := w.check(f.Tick); err != nil {
		return err
	}
	// Canonical order puts the lowest and highest player first and last.
	if players := w.pack.Players(); !f.Canonical() || f.Commands[0].Player == 0 || f.Commands[len(f.Commands)-1].Player > players {
		return fmt.Errorf("%w: frame for tick %d: commands must be from players 1..%d, in (player, seq) order, each pair once", ErrOrder, f.Tick, players)
	}
	undo := w.state()
	w.appendIdle()
	w.markIndex()
	if w.anchor || !w.packed {
		w.buf = w.pack.AppendFrame(w.buf, f)
		w.anchor = false
	} else {
		w.buf = w.pack.AppendPacked(w.buf, f)
	}
	w.recordDone()
	w.next = f.Tick + 1
	w.written = w.next
	return w.commit(undo)
}

// Anchor makes the stream's end a point a reader can start at: it ends the block there
// (EndBlock), and the next tick record is a whole Frame or an idle record, never a packed
// one, which needs the records before it. A relay calls it where it notes a point that
// players resume from.
func (w *Writer) Anchor() error {
	w.anchor = true
	return w.EndBlock()
}

// EndBlock writes a crc record for the bytes written since the last one, if there are
// any (format version 3; a no-op before): everything written so far is then checked.
func (w *Writer) EndBlock() error {
	if w.err != nil {
		return w.err
	}
	undo := w.state()
	w.endBlock()
	return w.commit(undo)
}

// blockLen is the current block's length: written bytes and those in buf.
func (w *Writer) blockLen() int { return w.block.Len() + len(w.buf) - w.blockFrom }

// endBlock appends a crc record for the current block, if it holds any bytes.
func (w *Writer) endBlock() {
	if !w.crc || w.blockLen() == 0 {
		return
	}
	b := w.block
	b.Add(w.buf[w.blockFrom:])
	w.buf = stream.AppendCRC(w.buf, b.Sum())
	w.block.Reset()
	w.blockFrom = len(w.buf)
}

// recordDone ends the block after a record that brought it to stream.MaxBlock bytes.
func (w *Writer) recordDone() {
	if w.blockLen() >= stream.MaxBlock {
		w.endBlock()
	}
}

// writerState is what a failed write rolls back, so the file and the writer agree.
type writerState struct {
	next, written, index, nextIndex uint64
	block                           stream.Block
}

func (w *Writer) state() writerState {
	return writerState{w.next, w.written, uint64(len(w.index)), w.nextIndex, w.block}
}

// commit flushes the buffer; if nothing could be written it restores the state before.
func (w *Writer) commit(undo writerState) error {
	err := w.flush(false)
	if err != nil {
		w.rollback(undo)
	}
	return err
}

// rollback drops the buffer and restores the state before it. The seq bases may have
// moved for records that were never written, so the next frame is a whole one.
func (w *Writer) rollback(undo writerState) {
	w.buf, w.blockFrom, w.block = w.buf[:0], 0, undo.block
	w.next, w.written, w.nextIndex = undo.next, undo.written, undo.nextIndex
	w.index = w.index[:undo.index]
	w.anchor = true
}

// Empty records that tick, the next tick, was sealed with no commands.
func (w *Writer) Empty(tick uint64) error {
	if err := w.check(tick); err != nil {
		return err
	}
	w.next = tick + 1
	if w.next-w.written < w.opts.IdleFlush {
		return nil
	}
	undo := w.state()
	w.appendIdle()
	return w.commit(undo)
}

// FlushIdle writes the pending run of empty ticks now, so the file covers every tick
// sealed so far. A relay calls it before handing the stream to a joining connection and
// at each spectator batch, so that what they receive is exactly what is on disk.
func (w *Writer) FlushIdle() error {
	if w.err != nil {
		return w.err
	}
	if w.written == w.next {
		return nil
	}
	undo := w.state()
	w.appendIdle()
	return w.commit(undo)
}

func (w *Writer) check(tick uint64) error {
	if w.err != nil {
		return w.err
	}
	if !w.started {
		return fmt.Errorf("%w: tick %d before the match started (Begin)", ErrOrder, tick)
	}
	if tick != w.next {
		return fmt.Errorf("%w: frame for tick %d, the stream is at tick %d", ErrOrder, tick, w.next)
	}
	return nil
}

// appendIdle appends the pending run of empty ticks, if any, to the buffer.
func (w *Writer) appendIdle() {
	if w.written < w.next {
		w.markIndex()
		w.buf = w.pack.AppendIdle(w.buf, w.next-1)
		w.written = w.next
		w.anchor = false
		w.recordDone()
	}
}

// markIndex notes the offset of the record about to be appended when it is the first one
// past an index boundary.
func (w *Writer) markIndex() {
	if w.written >= w.nextIndex && w.written > 0 {
		w.endBlock() // a reader starting at the entry can check every block it reads
		w.index = append(w.index, &pb.IndexEntry{Tick: w.written - 1, Offset: uint64(w.size + int64(len(w.buf)))})
		w.nextIndex = w.written + w.opts.IndexEvery
		w.anchor = true
	}
}

// Checkpoint records the hash the players agreed on for tick.
func (w *Writer) Checkpoint(tick, hash uint64) error {
	return w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: &pb.Checkpoint{Tick: tick, Hash: hash}}})
}

// Record writes any other stream record (checkpoint, desync, desync report, arbitration,
// heal, event, and the kinds added after them), after the pending run of empty ticks so
// that it follows every tick sealed before it. It refuses what the writer writes itself
// (start, frames, idle runs, crc, end) and what is never in a stream (the records of one
// connection).
func (w *Writer) Record(msg *pb.ServerMessage) error {
	if w.err != nil {
		return w.err
	}
	switch msg.GetMsg().(type) {
	case nil, *pb.ServerMessage_Start, *pb.ServerMessage_Frame, *pb.ServerMessage_Packed, *pb.ServerMessage_Idle, *pb.ServerMessage_Crc, *pb.ServerMessage_End:
		return fmt.Errorf("replay: Record takes the stream's other records, not %T (the start goes through NewWriter, frames through Frame, the end through Close)", msg.GetMsg())
	}
	if stream.ConnectionOnly(msg) {
		return fmt.Errorf("replay: %T is a record of one connection, never in a stream", msg.GetMsg())
	}
	undo := w.state()
	w.appendIdle()
	var err error
	if w.buf, err = stream.AppendRecord(w.buf, msg); err != nil {
		w.rollback(undo)
		return err
	}
	w.recordDone()
	return w.commit(undo)
}

// Close writes the pending empty ticks and the end record (with the index; LastTick is
// filled in) and closes the destination if it is an io.Closer. end may be nil for a plain
// end with no reason.
func (w *Writer) Close(end *pb.End) error {
	if w.err == ErrClosed {
		return ErrClosed
	}
	var err error
	if w.err == nil || w.err == ErrTooLarge {
		w.err = nil
		if end == nil {
			end = &pb.End{}
		}
		w.appendIdle()
		end.LastTick = 0
		if w.next > 0 {
			end.LastTick = w.next - 1
		}
		end.Index = w.index
		if w.buf, err = stream.AppendRecord(w.buf, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: end}}); err == nil {
			w.endBlock() // the end record is checked too
			err = w.flush(true)
		}
	} else {
		err = w.err
	}
	if w.opts.Sync != SyncNever {
		if s, ok := w.dst.(interface{ Sync() error }); ok {
			if serr := s.Sync(); err == nil && serr != nil {
				err = fmt.Errorf("replay: sync: %w", serr)
			}
		}
	}
	if c, ok := w.dst.(io.Closer); ok {
		if cerr := c.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("replay: close: %w", cerr)
		}
	}
	w.err = ErrClosed
	return err
}

// flush writes the buffer in one Write call. Past the size cap nothing is written and the
// error is ErrTooLarge (unless final, for the end record).
func (w *Writer) flush(final bool) error {
	if len(w.buf) == 0 {
		return nil
	}
	if !final && w.size+int64(len(w.buf)) > w.opts.MaxBytes {
		w.buf = w.buf[:0]
		w.err = ErrTooLarge
		return fmt.Errorf("%w: %d bytes written, the next record would pass the %d-byte cap; raise the cap or end the match", ErrTooLarge, w.size, w.opts.MaxBytes)
	}
	n, err := w.dst.Write(w.buf)
	w.size += int64(n)
	if w.crc && err == nil {
		w.block.Add(w.buf[w.blockFrom:])
	}
	w.buf, w.blockFrom = w.buf[:0], 0
	if err != nil {
		w.err = fmt.Errorf("replay: write: %w", err)
		return w.err
	}
	if w.opts.Sync == SyncEveryRecord {
		if s, ok := w.dst.(interface{ Sync() error }); ok {
			if err := s.Sync(); err != nil {
				w.err = fmt.Errorf("replay: sync: %w", err)
				return w.err
			}
		}
	}
	return nil
}
