package replay

import (
	"errors"
	"fmt"
)

var (
	// ErrUnwritten means a file holds nothing but zero bytes, or nothing: the relay that
	// created it was stopped before it wrote the header (Reopen; no player could have
	// joined the match, since its tokens were not handed out yet).
	ErrUnwritten = errors.New("replay: the file holds no bytes but zeros: its relay was stopped before writing its header")
	// ErrNotReplay means the bytes do not start with the replay magic.
	ErrNotReplay = errors.New("replay: not a tickrelay replay file (bad magic)")
	// ErrVersion means the file is of a format version this build cannot read.
	ErrVersion = errors.New("replay: unsupported format version")
	// ErrTruncated means the file ends before its end record: the relay that wrote it was
	// stopped mid-match, or the file was cut. Everything before the cut was readable.
	ErrTruncated = errors.New("replay: file ends without an end record")
	// ErrCorrupt means a record breaks the format's rules.
	ErrCorrupt = errors.New("replay: corrupt record")
	// ErrTooLarge means writing a record would pass the writer's size cap.
	ErrTooLarge = errors.New("replay: file size cap reached")
	// ErrClosed means the writer was closed.
	ErrClosed = errors.New("replay: writer closed")
	// ErrOrder means a record was written out of the stream's order (e.g. a frame for a
	// tick that is not the next one).
	ErrOrder = errors.New("replay: record out of order")
	// ErrIdentity means a replay cannot be checked by this build: another sim, sim version
	// or config. See *IdentityError.
	ErrIdentity = errors.New("replay: identity mismatch")
	// ErrDiverged means re-simulation disagrees with a recorded checkpoint or an expected
	// hash. See *DivergenceError.
	ErrDiverged = errors.New("replay: divergence")
)

// TruncatedError says where a file was cut. errors.Is(err, ErrTruncated) holds.
type TruncatedError struct {
	// Offset is the byte offset where the last whole record ends.
	Offset int64
	// Partial is how many bytes of an incomplete record follow Offset (0 if the file was
	// cut between records).
	Partial int64
	// LastTick is the last tick the whole records cover, and HasTick whether any tick is.
	LastTick uint64
	HasTick  bool
	// Unchecked is how many bytes of whole records before Offset follow the last crc
	// record (format version 3): the block a writer was killed in. They are read and
	// checked against the format's rules, but damage in them cannot be told apart.
	Unchecked int64
	// Reserved is how many zero bytes follow Offset to the end of the file: space a relay
	// reserved ahead of its writes (it grows the file a window at a time) and was killed
	// before cutting off. They were never written; Partial is 0 then.
	Reserved int64
}

func (e *TruncatedError) Error() string {
	at := "before any tick"
	if e.HasTick {
		at = fmt.Sprintf("after tick %d", e.LastTick)
	}
	unchecked := ""
	if e.Unchecked > 0 {
		unchecked = fmt.Sprintf(" (its last %d bytes, from byte %d, have no crc record yet: unchecked)", e.Unchecked, e.Offset-e.Unchecked)
	}
	if e.Partial > 0 {
		return fmt.Sprintf("replay: file cut %s, at byte %d inside a record (%d bytes of it present); everything before byte %d is readable%s", at, e.Offset+e.Partial, e.Partial, e.Offset, unchecked)
	}
	if e.Reserved > 0 {
		return fmt.Sprintf("replay: file ends %s at byte %d without an end record, followed by %d zero bytes the relay had reserved ahead of its writes "+
			"(it was stopped mid-match); everything before byte %d is readable%s", at, e.Offset, e.Reserved, e.Offset, unchecked)
	}
	return fmt.Sprintf("replay: file ends %s at byte %d without an end record (the writer was stopped mid-match); everything before it is readable%s", at, e.Offset, unchecked)
}

func (e *TruncatedError) Unwrap() error { return ErrTruncated }

// CorruptError says which record broke which rule. errors.Is(err, ErrCorrupt) holds.
type CorruptError struct {
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("replay: corrupt record at byte %d: %s", e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// IdentityError names the field in which a replay and this build disagree.
// errors.Is(err, ErrIdentity) holds.
// File is what the match's Start record says (a file's, or a live match's), Build what
// this program has; Hint, if set, says what to do about it.
type IdentityError struct {
	Field string
	File  string
	Build string
	Hint  string
}

func (e *IdentityError) Error() string {
	msg := fmt.Sprintf("replay: %s differs: the match has %s, this program has %s", e.Field, e.File, e.Build)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *IdentityError) Unwrap() error { return ErrIdentity }

// DivergenceError names the first tick at which re-simulation disagrees with a recorded or
// expected hash. errors.Is(err, ErrDiverged) holds.
type DivergenceError struct {
	Tick     uint64
	Expected uint64
	Computed uint64
	// Source says where Expected came from: "checkpoint" or "expected hash stream".
	Source string
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("replay: diverged at tick %d: %s hash %016x, re-simulation computed %016x", e.Tick, e.Source, e.Expected, e.Computed)
}

func (e *DivergenceError) Unwrap() error { return ErrDiverged }
