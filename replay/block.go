// Reading version 3 files a block at a time: a block's records are believed only once
// its crc record matched.

package replay

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// endField is the end record's field number, from the generated descriptor.
var endField = (&pb.ServerMessage{}).ProtoReflect().Descriptor().Fields().ByName("end").Number()

// fill reads blocks until it queues something: a block's records up to its crc record,
// whose sum it checks before it decodes and checks every record and queues them (and
// the error that stops the stream, if one does; crc records are not queued). A damaged block is one *CorruptError at the block's first byte;
// nothing of it is queued. At the end of the file before a crc record (a writer killed
// mid-block), the block's whole records are queued unchecked, then the *TruncatedError.
// It returns an error only for what stops reading before anything is queued.
func (r *Reader) fill() error {
	from := r.off
	var blk stream.Block
	// The block's records, back to back in one buffer the reader reuses (decoding
	// copies what it keeps).
	recs, raw := r.recs[:0], r.raw[:0]
	for len(r.queue) == 0 {
		at := r.off
		rec, err := r.readRaw()
		if cut := (*TruncatedError)(nil); errors.As(err, &cut) {
			if !r.decodeBlock(recs, raw) {
				return nil
			}
			if r.ended {
				// The end record and its crc record are written at once.
				r.queue = append(r.queue, queued{off: r.off, err: &CorruptError{Offset: r.off, Reason: "the end record is not followed by its whole crc record: " +
					"the file was damaged there (or cut just after its end), and its last block cannot be checked"}})
				return nil
			}
			// The block's records are decoded now: the cut comes after their ticks.
			cut.LastTick, cut.HasTick = r.LastTick()
			cut.Unchecked = r.off - r.checked
			r.queue = append(r.queue, queued{off: r.off, err: cut})
			return nil
		}
		if err != nil {
			if len(recs) == 0 {
				return err
			}
			// A header that does not parse inside a block: damage, found before the sum.
			return &CorruptError{Offset: from, Reason: fmt.Sprintf("the block from byte %d is damaged: at byte %d %s", from, at, reasonOf(err))}
		}
		if body, ok := stream.CRCBody(rec); ok {
			if err := blk.Check(body); err != nil {
				return &CorruptError{Offset: from, Reason: fmt.Sprintf("the block of bytes %d to %d fails its crc record at byte %d: %v", from, at, at, err)}
			}
			r.off += int64(len(rec))
			r.checked = r.off
			r.decodeBlock(recs, raw)
			return nil
		}
		if at-from >= stream.MaxBlock {
			return &CorruptError{Offset: from, Reason: fmt.Sprintf("no crc record within %d bytes of the block starting at byte %d (a writer ends a block at %d bytes): the block is damaged", at-from, from, stream.MaxBlock)}
		}
		blk.Add(rec)
		recs = append(recs, rawRecord{off: at, from: len(raw), to: len(raw) + len(rec)})
		raw = append(raw, rec...)
		r.recs, r.raw = recs, raw // kept for the next block
		r.off += int64(len(rec))
	}
	return nil
}

// rawRecord is a record of a block not yet checked: its offset in the file and where
// its bytes are in the block's buffer.
type rawRecord struct {
	off      int64
	from, to int
}

// decodeBlock decodes and checks a block's records, queueing each; the first that fails
// is queued as its error, and it reports false.
func (r *Reader) decodeBlock(recs []rawRecord, raw []byte) bool {
	for _, rec := range recs {
		off, b := rec.off, raw[rec.from:rec.to]
		msg := &pb.ServerMessage{}
		err := stream.DecodeRecord(b, msg)
		if errors.Is(err, stream.ErrUnknownRecord) && r.start != nil && !r.ended {
			// A kind a newer writer added: its bytes are checked with the block; skip it.
			continue
		}
		if err == nil && r.ended {
			err = fmt.Errorf("a %s record after the end record", stream.RecordName(msg))
		}
		if err == nil && msg.GetCrc() != nil {
			err = fmt.Errorf("a crc record inside a block")
		}
		packed := msg.GetPacked() != nil
		if err == nil && r.start == nil && msg.GetStart() != nil {
			// The first record: NewReader checks it.
			r.start, r.players = msg.GetStart(), uint32(len(msg.GetStart().GetPlayers()))
			err = r.unpack.Expand(msg)
		} else if err == nil && r.start != nil {
			if err = r.unpack.Expand(msg); err == nil {
				err = r.validate(msg)
			}
		}
		if err != nil {
			r.queue = append(r.queue, queued{off: off, err: &CorruptError{Offset: off, Reason: err.Error()}})
			return false
		}
		r.queue = append(r.queue, queued{off: off, msg: msg, packed: packed})
	}
	return true
}

func reasonOf(err error) string {
	var c *CorruptError
	if errors.As(err, &c) {
		return c.Reason
	}
	return err.Error()
}

// finishedTail reports whether b, the bytes from a record that runs past the end of the
// file to that end, end as a finished file does: a crc record after a whole end record,
// or after the bytes of an end record (b itself) whose length is damaged. A torn write
// leaves a prefix of one record, which hardly ever ends so; damage to a record's length
// near the end of a finished file does.
func finishedTail(b []byte) bool {
	at, ok := crcAtEnd(b)
	if !ok || at < 2 {
		return false
	}
	if num, _, n := protowire.ConsumeTag(b); n > 0 && num == endField {
		return true // the end record's own header is damaged
	}
	for k := at - 2; k >= max(1, at-(64<<10)); k-- {
		if n, err := stream.RecordSize(b[k:at]); err == nil && n == at-k {
			var msg pb.ServerMessage
			if stream.DecodeRecord(b[k:at], &msg) == nil && msg.GetEnd() != nil {
				return true
			}
		}
	}
	return false
}

// crcAtEnd reports whether b ends with a crc record, and where that record starts.
func crcAtEnd(b []byte) (at int, ok bool) {
	at = len(b) - stream.CRCRecordSize
	if at < 0 {
		return 0, false
	}
	body, ok := stream.CRCBody(b[at:])
	return at, ok && len(body) == 4
}
