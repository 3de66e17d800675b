package stream

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// Version is the stream format this build writes, and the one a client states in
// Join.stream_version: version 2 added packed frames to version 1, version 3 crc records
// (CRCVersion). A replay file holds the stream, so its format version is this one too
// (replay.FormatVersion).
const Version = CRCVersion

// MinVersion is the oldest stream format a relay serves: 2. A version 2 client reads the
// version 3 stream as it is, since it skips record kinds it does not know (crc records,
// and the kinds added since without a new version: probes, desync reports); what differs
// for it is resuming, which is by tick (Join.resume_from), never by its byte offset
// (Join.resume_offset), because it does not count the records it skips. Version 1 had no
// packed frames, which spectator streams are made of. The policy (tickrelay.proto, Join):
// a relay serves the current version and the one before it; a version is dropped only
// when a new one is made, and the refusal says to upgrade (ERROR_CODE_UPGRADE).
const MinVersion = 2

// MaxRecordSize bounds one record's body, so a corrupt length cannot make a reader
// allocate without bound.
const MaxRecordSize = 16 << 20

// The protobuf field numbers the hand-written encoders of this package use, as in
// tickrelay.proto: the ServerMessage oneof's, and those of Frame, Command, Idle and
// CommandAck. Written down here only; the encoders must produce exactly what
// proto.Marshal does, and tests hold them to it and to the generated descriptors.
const (
	fieldFrame      = 1
	fieldIdle       = 2
	fieldCommandAck = 3
	fieldPacked     = 13
	fieldCRC        = 14

	frameTick     = 1
	frameCommands = 2

	commandPlayer  = 1
	commandSeq     = 2
	commandPayload = 3

	idleThrough = 1

	ackSeq    = 1
	ackTick   = 2
	ackReject = 3
	ackDetail = 4
)

// AppendFrame appends f as one ServerMessage{frame} record to dst and returns the result.
// It allocates only if dst must grow: the relay encodes each sealed tick once with it and
// writes the same bytes to every player, spectator and the replay file.
func AppendFrame(dst []byte, f lockstep.Frame) []byte {
	body := 0
	if f.Tick != 0 {
		body += 1 + protowire.SizeVarint(f.Tick)
	}
	for i := range f.Commands {
		n := commandSize(f.Commands[i].Player, f.Commands[i].Seq, len(f.Commands[i].Payload))
		body += 1 + protowire.SizeBytes(n)
	}
	dst = protowire.AppendTag(dst, fieldFrame, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(body))
	if f.Tick != 0 {
		dst = protowire.AppendTag(dst, frameTick, protowire.VarintType)
		dst = protowire.AppendVarint(dst, f.Tick)
	}
	for i := range f.Commands {
		c := &f.Commands[i]
		dst = protowire.AppendTag(dst, frameCommands, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(commandSize(c.Player, c.Seq, len(c.Payload))))
		if c.Player != 0 {
			dst = protowire.AppendTag(dst, commandPlayer, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(c.Player))
		}
		if c.Seq != 0 {
			dst = protowire.AppendTag(dst, commandSeq, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(c.Seq))
		}
		if len(c.Payload) != 0 {
			dst = protowire.AppendTag(dst, commandPayload, protowire.BytesType)
			dst = protowire.AppendBytes(dst, c.Payload)
		}
	}
	return dst
}

func commandSize(player, seq uint32, payload int) int {
	n := 0
	if player != 0 {
		n += 1 + protowire.SizeVarint(uint64(player))
	}
	if seq != 0 {
		n += 1 + protowire.SizeVarint(uint64(seq))
	}
	if payload != 0 {
		n += 1 + protowire.SizeBytes(payload)
	}
	return n
}

// AppendIdle appends a ServerMessage{idle} record saying every tick up to and including
// through was sealed empty.
func AppendIdle(dst []byte, through uint64) []byte {
	body := 0
	if through != 0 {
		body = 1 + protowire.SizeVarint(through)
	}
	dst = protowire.AppendTag(dst, fieldIdle, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(body))
	if through != 0 {
		dst = protowire.AppendTag(dst, idleThrough, protowire.VarintType)
		dst = protowire.AppendVarint(dst, through)
	}
	return dst
}

var marshal = proto.MarshalOptions{Deterministic: true}

// AppendRecord appends msg, which must have exactly one field of its oneof set, as one
// record. Use it for the rare records (start, checkpoint, desync, event, end, ack, error);
// AppendFrame and AppendIdle are the allocation-free paths for the per-tick ones.
func AppendRecord(dst []byte, msg *pb.ServerMessage) ([]byte, error) {
	if msg.GetMsg() == nil {
		return dst, ErrNoMessage
	}
	return marshal.MarshalAppend(dst, msg)
}

// SplitRecord returns the length of the first record in b: one ServerMessage field (tag,
// length, body). Use it to walk a message that holds several records back to back, as
// spectators receive. It returns an error, never panics, for bytes that are not a whole
// record; n is 0 then.
func SplitRecord(b []byte) (n int, err error) {
	total, err := RecordSize(b)
	if err != nil {
		return 0, err
	}
	if total > len(b) {
		return 0, fmt.Errorf("%w: it needs %d bytes, only %d present", ErrRecord, total, len(b))
	}
	return total, nil
}

// RecordSize returns the whole size (tag, length, body) of the record b starts with,
// from its tag and length alone: b may hold less of the record than that. It fails for a
// header that is cut or not a length-delimited field, and for a body over MaxRecordSize.
func RecordSize(b []byte) (int, error) {
	num, typ, tagLen := protowire.ConsumeTag(b)
	if tagLen < 0 {
		return 0, fmt.Errorf("%w: bad tag: %w", ErrRecord, protowire.ParseError(tagLen))
	}
	if typ != protowire.BytesType {
		return 0, fmt.Errorf("%w: field %d has wire type %d, want length-delimited (2)", ErrRecord, num, typ)
	}
	size, lenLen := protowire.ConsumeVarint(b[tagLen:])
	if lenLen < 0 {
		return 0, fmt.Errorf("%w: bad length: %w", ErrRecord, protowire.ParseError(lenLen))
	}
	if size > MaxRecordSize {
		return 0, fmt.Errorf("%w: a body of %d bytes is larger than the %d-byte limit", ErrRecord, size, MaxRecordSize)
	}
	return tagLen + lenLen + int(size), nil
}

// DecodeRecord decodes one whole record (as delimited by SplitRecord) into msg, replacing
// its contents. It fails with ErrUnknownRecord for a record of a type this build does not
// know (a reader may skip it) and with ErrRecord for bytes that are not a ServerMessage,
// a known field's included with another wire type than its schema's (wire.go).
func DecodeRecord(rec []byte, msg *pb.ServerMessage) error {
	if err := proto.Unmarshal(rec, msg); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if err := checkWire(recordRules, rec); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if msg.GetMsg() == nil {
		num, _, _ := protowire.ConsumeTag(rec)
		return fmt.Errorf("%w (field %d); a newer relay may have written it", ErrUnknownRecord, num)
	}
	return nil
}

// FrameOf is the lockstep.Frame a decoded Frame record holds. Its commands are appended
// to cmds[:0] (nil: a new slice); the payloads are f's, not copied.
func FrameOf(f *pb.Frame, cmds []sim.Command) lockstep.Frame {
	if cmds == nil {
		cmds = make([]sim.Command, 0, len(f.GetCommands()))
	}
	cmds = cmds[:0]
	for _, c := range f.GetCommands() {
		cmds = append(cmds, sim.Command{Player: c.GetPlayer(), Seq: c.GetSeq(), Payload: c.GetPayload()})
	}
	return lockstep.Frame{Tick: f.GetTick(), Commands: cmds}
}

// ConnectionOnly reports whether msg is a record of one connection, never part of a
// match's stream (its replay file, its spectators' bytes): a Welcome, an ack, a ping or
// pong, an Error, a desync Probe, a HealState. A new stream kind needs nothing here.
func ConnectionOnly(msg *pb.ServerMessage) bool {
	switch msg.GetMsg().(type) {
	case *pb.ServerMessage_Welcome, *pb.ServerMessage_CommandAck, *pb.ServerMessage_Ping, *pb.ServerMessage_Pong,
		*pb.ServerMessage_Error, *pb.ServerMessage_Probe, *pb.ServerMessage_HealState:
		return true
	}
	return false
}

// RecordName is the name of the record msg is (its oneof field: "frame", "idle",
// "packed", …), or "empty".
func RecordName(msg *pb.ServerMessage) string {
	if m := msg.GetMsg(); m != nil {
		return string(msg.ProtoReflect().WhichOneof(msg.ProtoReflect().Descriptor().Oneofs().Get(0)).Name())
	}
	return "empty"
}
