package stream

import pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"

// Walker goes through the records of a byte slice in order — a relay message of several
// records, a stream file, a piece of one — each whole (SplitRecord); Decode decodes the
// current one, expanding a packed frame. Every reader of records uses it, so where a
// record ends, what a cut one is and how a packed frame becomes a Frame are decided once.
//
//	w := stream.NewWalker(b)
//	for w.Next() {
//		… w.Record(), w.Offset(), w.Decode(&msg, &unpacker) …
//	}
//	if err := w.Err(); err != nil { … b is not whole records from w.Offset() on … }
type Walker struct {
	b         []byte
	off, next int // the current record is b[off:next]
	err       error
}

// NewWalker returns a Walker before the first record of b.
func NewWalker(b []byte) Walker { return Walker{b: b} }

// Next moves to the next record: false at the end of b, or at bytes that are not a whole
// record (Err says why; Offset is where they start).
func (w *Walker) Next() bool {
	w.off = w.next
	if w.err != nil || w.off >= len(w.b) {
		return false
	}
	n, err := SplitRecord(w.b[w.off:])
	if err != nil {
		w.err = err
		return false
	}
	w.next = w.off + n
	return true
}

// Record is the current record's bytes (a slice of b).
func (w *Walker) Record() []byte { return w.b[w.off:w.next] }

// Offset is where the current record starts in b (after the last Next that returned
// false: where the walk stopped).
func (w *Walker) Offset() int { return w.off }

// End is where the current record ends in b (where the next one starts).
func (w *Walker) End() int { return w.next }

// Rest is what follows the current record in b.
func (w *Walker) Rest() []byte { return w.b[w.next:] }

// Err is why the walk stopped before the end of b, or nil.
func (w *Walker) Err() error { return w.err }

// Decode decodes the current record into msg (DecodeRecord: ErrUnknownRecord for a kind
// this build does not know, which a reader may skip) and, with u, expands a packed frame
// into the Frame it codes (Unpacker.Expand), u following every tick record walked.
func (w *Walker) Decode(msg *pb.ServerMessage, u *Unpacker) error {
	if err := DecodeRecord(w.Record(), msg); err != nil {
		return err
	}
	if u != nil {
		return u.Expand(msg)
	}
	return nil
}

// WholePrefix returns how many bytes at b's start are whole records.
func WholePrefix(b []byte) int {
	w := NewWalker(b)
	for w.Next() {
	}
	return w.Offset()
}

// Whole reports whether b is whole records, none cut.
func Whole(b []byte) bool { return WholePrefix(b) == len(b) }
