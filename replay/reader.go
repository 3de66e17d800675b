package replay

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tickrelay/tickrelay/internal/lib/mapappend"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// Reader reads a replay file record by record and checks every rule of the format as it
// goes. It returns errors, never panics, for any bytes: *TruncatedError where the file is
// cut, *CorruptError (with the byte offset) where a record breaks a rule.
type Reader struct {
	br      *bufio.Reader
	closer  io.Closer
	off     int64 // offset of the next record
	start   *pb.Start
	players uint32
	next    uint64 // the next tick a frame or idle record may cover
	ended   bool
	buf     []byte
	version uint64
	unpack  stream.Unpacker
	packed  bool // the last record Next returned was a packed frame

	// Version 3: records are read a block at a time and returned only once the block's
	// crc record checked (the tail of a cut file excepted, see TruncatedError.Unchecked).
	// queue[qhead:] are still to be returned.
	queue   []queued
	qhead   int
	checked int64 // bytes [0, checked) are the header or in checked blocks
	started bool  // the started event was read (always true before version 3)
	recs    []rawRecord
	raw     []byte
}

// queued is a record of a checked block, or the error that ends the stream there.
type queued struct {
	msg    *pb.ServerMessage
	off    int64
	packed bool
	err    error
}

// Open opens the replay file at path; Close closes it.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	r, err := NewReader(f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads the header (magic, format version, Start record) from src.
func NewReader(src io.Reader) (*Reader, error) {
	r := &Reader{br: bufio.NewReaderSize(src, 64<<10)}
	var magic [len(Magic)]byte
	n, err := io.ReadFull(r.br, magic[:])
	if err != nil {
		if n > 0 && bytes.Equal(magic[:n], Magic[:n]) {
			return nil, &TruncatedError{Offset: 0, Partial: int64(n)}
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: the file is empty", ErrNotReplay)
		}
		return nil, ErrNotReplay
	}
	if magic != Magic {
		return nil, ErrNotReplay
	}
	cr := &countingReader{r: r.br}
	version, err := binary.ReadUvarint(cr)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, &TruncatedError{Offset: 0, Partial: int64(len(Magic))}
	}
	if err != nil {
		return nil, &CorruptError{Offset: int64(len(Magic)), Reason: "format version: " + err.Error()}
	}
	if version == 0 || version > FormatVersion {
		return nil, fmt.Errorf("%w: the file is format version %d, this build reads versions 1 to %d; use a tickrelay build that reads version %d", ErrVersion, version, FormatVersion, version)
	}
	r.version = version
	r.off = int64(len(Magic) + cr.n) // as many bytes as the varint took (it may be padded)
	startOff := r.off
	r.checked, r.started = r.off, version < stream.CRCVersion
	var msg *pb.ServerMessage
	if version >= stream.CRCVersion {
		// The start record is checked with its block before it is believed.
		if err := r.fill(); err != nil {
			return nil, err
		}
		msg, err = r.pop()
	} else {
		msg, err = r.read()
	}
	if err != nil {
		return nil, err
	}
	start := msg.GetStart()
	if start == nil {
		return nil, &CorruptError{Offset: startOff, Reason: fmt.Sprintf("the first record must be start, found %s", stream.RecordName(msg))}
	}
	if start.GetSimName() == "" {
		return nil, &CorruptError{Offset: startOff, Reason: "the start record names no sim"}
	}
	if len(start.GetPlayers()) == 0 {
		return nil, &CorruptError{Offset: startOff, Reason: "the start record has no players (a relay makes matches of 1 or more)"}
	}
	for i, p := range start.GetPlayers() {
		if p.GetId() != uint32(i+1) {
			return nil, &CorruptError{Offset: startOff, Reason: fmt.Sprintf("player %d of the start record has id %d, want %d", i, p.GetId(), i+1)}
		}
	}
	r.start = start
	r.players = uint32(len(start.GetPlayers()))
	if err := r.unpack.Expand(msg); err != nil {
		return nil, err
	}
	return r, nil
}

// Start returns the match's Start record.
func (r *Reader) Start() *pb.Start { return r.start }

// Packed reports whether the record Next last returned, a Frame, was packed in the file.
func (r *Reader) Packed() bool { return r.packed }

// Version returns the file's format version.
func (r *Reader) Version() uint64 { return r.version }

// Offset returns the byte offset of the next record.
func (r *Reader) Offset() int64 {
	if r.qhead < len(r.queue) {
		return r.queue[r.qhead].off
	}
	return r.off
}

// Started reports whether the match left its lobby: the started event was read (a file
// of format version 1 or 2 has none, and always started).
func (r *Reader) Started() bool { return r.started }

// Checked returns how many bytes from the file's start are the header or in blocks whose
// crc record was read and matched (the whole file up to the last record read, before
// version 3).
func (r *Reader) Checked() int64 {
	if r.version < stream.CRCVersion {
		return r.Offset()
	}
	return r.checked
}

// LastTick returns the last tick the records read so far cover (a version 3 reader
// reads ahead to the end of the current block).
func (r *Reader) LastTick() (tick uint64, ok bool) {
	if r.next == 0 {
		return 0, false
	}
	return r.next - 1, true
}

// Close closes the file if the Reader opened it.
func (r *Reader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// Next returns the next record: a frame, idle, checkpoint, desync, event or end. After the
// end record it returns io.EOF. Where the file stops before the end record it returns a
// *TruncatedError; everything returned before that was whole and valid.
func (r *Reader) Next() (*pb.ServerMessage, error) {
	if r.version >= stream.CRCVersion {
		for r.qhead == len(r.queue) {
			if r.ended {
				return nil, r.afterEnd("the end record's crc record")
			}
			if err := r.fill(); err != nil {
				return nil, err
			}
		}
		return r.pop()
	}
	if r.ended {
		return nil, r.afterEnd("the end record")
	}
	at := r.off
	msg, err := r.read()
	if err != nil {
		return nil, err
	}
	if msg.GetPacked() != nil && r.version < 2 {
		return nil, &CorruptError{Offset: at, Reason: fmt.Sprintf("a packed frame in a format version %d file", r.version)}
	}
	// Packed frames come out as the Frames they code.
	r.packed = msg.GetPacked() != nil
	if err := r.unpack.Expand(msg); err != nil {
		return nil, &CorruptError{Offset: at, Reason: err.Error()}
	}
	if err := r.validate(msg); err != nil {
		return nil, &CorruptError{Offset: at, Reason: err.Error()}
	}
	return msg, nil
}

// pop returns the next queued record (or error) of a version 3 file.
func (r *Reader) pop() (*pb.ServerMessage, error) {
	q := r.queue[r.qhead]
	r.qhead++
	if r.qhead == len(r.queue) {
		r.queue, r.qhead = r.queue[:0], 0
	}
	r.packed = q.packed
	return q.msg, q.err
}

// validate checks a record against the stream so far (its ticks, its start, its end) and
// moves the stream's tick past a frame or an idle run.
func (r *Reader) validate(msg *pb.ServerMessage) error {
	switch msg.GetMsg().(type) {
	case *pb.ServerMessage_Frame, *pb.ServerMessage_Idle, *pb.ServerMessage_Checkpoint, *pb.ServerMessage_Desync, *pb.ServerMessage_DesyncReport, *pb.ServerMessage_Arbitration, *pb.ServerMessage_Heal:
		if !r.started {
			return fmt.Errorf("a %s record before the match's started event (its lobby has no ticks)", stream.RecordName(msg))
		}
	}
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Frame:
		if err := r.validateFrame(m.Frame); err != nil {
			return err
		}
		r.next = m.Frame.GetTick() + 1
	case *pb.ServerMessage_Idle:
		through := m.Idle.GetThroughTick()
		if through > MaxTick {
			return fmt.Errorf("idle through tick %d, past the last tick a file may hold (%d)", through, uint64(MaxTick))
		}
		if through < r.next {
			return fmt.Errorf("idle through tick %d, the stream is already at tick %d", through, r.next)
		}
		r.next = through + 1
	case *pb.ServerMessage_Checkpoint:
		if m.Checkpoint.GetTick() >= r.next {
			return fmt.Errorf("checkpoint for tick %d, which is not sealed yet (stream at tick %d)", m.Checkpoint.GetTick(), r.next)
		}
	case *pb.ServerMessage_Desync:
		if m.Desync.GetTick() >= r.next {
			return fmt.Errorf("desync at tick %d, which is not sealed yet (stream at tick %d)", m.Desync.GetTick(), r.next)
		}
	case *pb.ServerMessage_DesyncReport:
		if m.DesyncReport.GetDesyncTick() >= r.next {
			return fmt.Errorf("desync report of tick %d, which is not sealed yet (stream at tick %d)", m.DesyncReport.GetDesyncTick(), r.next)
		}
	case *pb.ServerMessage_Arbitration:
		if m.Arbitration.GetDesyncTick() >= r.next {
			return fmt.Errorf("arbitration of tick %d, which is not sealed yet (stream at tick %d)", m.Arbitration.GetDesyncTick(), r.next)
		}
	case *pb.ServerMessage_Heal:
		if t := max(m.Heal.GetDesyncTick(), m.Heal.GetTick()); t >= r.next {
			return fmt.Errorf("heal of tick %d, which is not sealed yet (stream at tick %d)", t, r.next)
		}
	case *pb.ServerMessage_Event:
		if m.Event.GetTick() > r.next {
			return fmt.Errorf("event at tick %d, past the stream's tick %d", m.Event.GetTick(), r.next)
		}
		if m.Event.GetKind() == pb.Event_KIND_STARTED {
			if r.started {
				return fmt.Errorf("a started event in a stream that already started (format version %d)", r.version)
			}
			r.started = true
		}
	case *pb.ServerMessage_End:
		last, _ := r.LastTick()
		if m.End.GetLastTick() != last {
			return fmt.Errorf("end record says the last tick is %d, the stream ends at tick %d", m.End.GetLastTick(), last)
		}
		r.ended = true
	default:
		return fmt.Errorf("a %s record does not belong in a replay", stream.RecordName(msg))
	}
	return nil
}

// validateFrame checks a frame against the stream so far: the next tick, with commands,
// each from one of the match's players, without a tick of its own, in (player, seq) order.
func (r *Reader) validateFrame(f *pb.Frame) error {
	if f.GetTick() > MaxTick {
		return fmt.Errorf("frame for tick %d, past the last tick a file may hold (%d)", f.GetTick(), uint64(MaxTick))
	}
	if f.GetTick() != r.next {
		return fmt.Errorf("frame for tick %d, the stream is at tick %d", f.GetTick(), r.next)
	}
	if len(f.GetCommands()) == 0 {
		return fmt.Errorf("frame for tick %d has no commands; empty ticks are idle records", f.GetTick())
	}
	for i, c := range f.GetCommands() {
		if c.GetPlayer() == 0 || c.GetPlayer() > r.players {
			return fmt.Errorf("frame for tick %d: command %d is from player %d, the match has players 1..%d", f.GetTick(), i, c.GetPlayer(), r.players)
		}
		if c.GetTick() != 0 {
			return fmt.Errorf("frame for tick %d: command %d carries its own tick %d", f.GetTick(), i, c.GetTick())
		}
		if i > 0 {
			p := f.GetCommands()[i-1]
			if p.GetPlayer() > c.GetPlayer() || (p.GetPlayer() == c.GetPlayer() && p.GetSeq() >= c.GetSeq()) {
				return fmt.Errorf("frame for tick %d: commands are not in (player, seq) order at command %d", f.GetTick(), i)
			}
		}
	}
	return nil
}

// read reads and decodes one whole record at r.off.
func (r *Reader) read() (*pb.ServerMessage, error) {
	rec, err := r.readRaw()
	if err != nil {
		return nil, err
	}
	msg := &pb.ServerMessage{}
	if err := stream.DecodeRecord(rec, msg); err != nil {
		return nil, &CorruptError{Offset: r.off, Reason: err.Error()}
	}
	r.off += int64(len(rec))
	return msg, nil
}

// readRaw reads one whole record at r.off into r.buf, without decoding it or moving r.off.
func (r *Reader) readRaw() ([]byte, error) {
	var head [2 * binary.MaxVarintLen64]byte
	n := 0
	// The tag and the length are two varints; read them a byte at a time.
	for v := 0; v < 2; v++ {
		for {
			b, err := r.br.ReadByte()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil, r.cut(int64(n))
				}
				return nil, fmt.Errorf("replay: read: %w", err)
			}
			if n == 0 && b == 0 {
				// Field 0 is no record's tag: this is the zero-filled tail a killed relay
				// leaves (it grows its file ahead of its writes), or damage.
				return nil, r.zeroTail()
			}
			if n == len(head) {
				return nil, &CorruptError{Offset: r.off, Reason: "record header is not two varints"}
			}
			head[n] = b
			n++
			if b < 0x80 {
				break
			}
		}
	}
	total, err := stream.RecordSize(head[:n])
	if err != nil {
		return nil, &CorruptError{Offset: r.off, Reason: err.Error()}
	}
	if cap(r.buf) < total {
		r.buf = make([]byte, total)
	}
	rec := r.buf[:total]
	copy(rec, head[:n])
	if got, err := io.ReadFull(r.br, rec[n:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if r.version >= stream.CRCVersion && finishedTail(rec[:n+got]) {
				return nil, &CorruptError{Offset: r.off, Reason: fmt.Sprintf("a record of %d bytes runs past the end of the file, "+
					"yet the file ends with a whole end record and its crc record: this record's header is damaged", total)}
			}
			return nil, r.cut(int64(n + got))
		}
		return nil, fmt.Errorf("replay: read: %w", err)
	}
	return rec, nil
}

func (r *Reader) cut(partial int64) *TruncatedError {
	last, ok := r.LastTick()
	return &TruncatedError{Offset: r.off, Partial: partial, LastTick: last, HasTick: ok}
}

// zeroTail reads the rest of the file after a zero byte at r.off, where a record should
// start. A relay appends through a mapping of its file (internal/lib/mapappend) and was
// killed: the zero is where its last append starts (that byte is stored last), what
// follows is space it had reserved, maybe holding part of that append, and the file's
// length is a multiple of mapappend.Align. The file is cut at r.off then. Anything else
// is damage: another length, a rest that ends a finished file (zeros aside), or (version
// 3) a rest that holds a whole block its crc record checks, which no torn append does.
func (r *Reader) zeroTail() error {
	rest, err := io.ReadAll(r.br)
	if err != nil {
		return fmt.Errorf("replay: read: %w", err)
	}
	size := r.off + 1 + int64(len(rest))
	why := ""
	switch {
	case size%mapappend.Align != 0:
		why = fmt.Sprintf("the file is %d bytes long, not a multiple of %d", size, mapappend.Align)
	case endsFinished(rest):
		why = "the file ends with an end record and its crc record"
	case r.version >= stream.CRCVersion && checkedBlockIn(rest):
		why = "a whole block follows that its crc record checks"
	}
	if why != "" {
		return &CorruptError{Offset: r.off, Reason: "a zero byte where a record should start, and not the zero-filled tail " +
			"a killed relay leaves (" + why + "): the file is damaged here"}
	}
	c := r.cut(0)
	c.Reserved = 1 + int64(len(rest))
	return c
}

// endsFinished reports whether rest, the file's bytes after a zero where a record should
// start, end as a finished file does (finishedTail) once trailing zeros are dropped (all
// but the last 4, which may end the crc record's sum); also if the zero was the end
// record's own tag.
func endsFinished(rest []byte) bool {
	t := len(rest)
	for t > 0 && rest[t-1] == 0 {
		t--
	}
	for k := 0; k <= 4 && t+k <= len(rest); k++ {
		if finishedTail(rest[:t+k]) || zeroWasEndTag(rest[:t+k]) {
			return true
		}
	}
	return false
}

// zeroWasEndTag reports whether rest, the bytes after a zero where a record should start,
// are an end record's (with that zero for its tag) and then its crc record.
func zeroWasEndTag(rest []byte) bool {
	at, ok := crcAtEnd(rest)
	if !ok || at < 1 {
		return false
	}
	rec := append(protowire.AppendTag(nil, endField, protowire.BytesType), rest[:at]...)
	var msg pb.ServerMessage
	n, err := stream.SplitRecord(rec)
	return err == nil && n == len(rec) && stream.DecodeRecord(rec, &msg) == nil && msg.GetEnd() != nil
}

// checkedBlockIn reports whether b holds a whole block between two crc records: bytes
// that split into records exactly and whose CRC-32C the second crc record holds.
func checkedBlockIn(b []byte) bool {
	var ends []int // where the crc records seen so far end (the last few)
	for i := 0; i+stream.CRCRecordSize <= len(b); i++ {
		body, ok := stream.CRCBody(b[i : i+stream.CRCRecordSize])
		if !ok || len(body) != 4 {
			continue
		}
		for _, from := range ends {
			if from < i && stream.Whole(b[from:i]) {
				var blk stream.Block
				blk.Add(b[from:i])
				if blk.Check(body) == nil {
					return true
				}
			}
		}
		if ends = append(ends, i+stream.CRCRecordSize); len(ends) > 8 {
			ends = ends[1:]
		}
	}
	return false
}

// afterEnd is io.EOF if the file ends at r.off, after its last record (last names it), or
// if the rest is zeros to a multiple of mapappend.Align bytes: a relay killed after
// writing its end record, before cutting off the tail it reserved, leaves them. Any
// other byte is damage.
func (r *Reader) afterEnd(last string) error {
	rest, err := io.ReadAll(r.br)
	if err != nil {
		return fmt.Errorf("replay: read: %w", err)
	}
	if len(rest) == 0 {
		return io.EOF
	}
	if i := firstNonZero(rest); i >= 0 {
		return &CorruptError{Offset: r.off, Reason: fmt.Sprintf("bytes after %s (byte %d is not zero)", last, r.off+int64(i))}
	}
	if size := r.off + int64(len(rest)); size%mapappend.Align != 0 {
		return &CorruptError{Offset: r.off, Reason: fmt.Sprintf("zero bytes after %s, to a length of %d bytes: not the tail a killed relay leaves (a multiple of %d)", last, size, mapappend.Align)}
	}
	return io.EOF
}

// firstNonZero returns the index of b's first byte that is not zero, or -1.
func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ByteReader
	n int
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}
