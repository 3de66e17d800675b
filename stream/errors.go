package stream

import "errors"

var (
	// ErrRecord means bytes are not a whole, well-formed record: cut, a bad tag or
	// length, a body over MaxRecordSize, or not a ServerMessage.
	ErrRecord = errors.New("stream: bad record")
	// ErrUnknownRecord means a whole, well-formed record of a type this build does not
	// know: a newer relay may have written it, and a reader may skip it.
	ErrUnknownRecord = errors.New("stream: unknown record type")
	// ErrPacked means a packed frame that cannot be placed (no start, frame or idle
	// record before it) or whose bytes break the coding.
	ErrPacked = errors.New("stream: bad packed frame")
	// ErrCRC means a crc record that does not match the block it ends, or is not 4
	// bytes: the block is damaged.
	ErrCRC = errors.New("stream: damaged block")
	// ErrNoMessage means AppendRecord was given a ServerMessage with no record set.
	ErrNoMessage = errors.New("stream: a record needs exactly one message set, got none")
)
