// Package stream implements the live record codec of tickrelay: the bytes the relay
// sends to players and spectators, the client reads, and a replay file holds after its
// header. Each record is one field of the ServerMessage oneof (tag, length, body), so a
// message of several records back to back is itself a ServerMessage stream.
//
// Use AppendFrame and AppendIdle to encode the per-tick records without allocating (the
// relay encodes each sealed tick once and writes the same bytes to every subscriber),
// and AppendRecord for the rare ones (start, checkpoint, desync, event, end, ack, error).
// Use SplitRecord (or RecordSize, from a record's header alone) to walk concatenated
// records and DecodeRecord to decode one; FrameOf turns a decoded Frame into a
// lockstep.Frame.
//
// Use a Packer to write a stream's tick records in their dense coding (packed frames:
// the tick implied, each seq a delta), and an Unpacker on every reader to turn packed
// records back into Frames.
//
// Use a Block, AppendCRC and CRCBody for the crc records of version 3: each ends a block
// of the stream with the CRC-32C of its bytes (MaxBlock bounds a block).
//
// # Versions
//
// Version is the stream format this build writes; a client states the version it reads
// in Join.stream_version and the relay refuses one older than its own. The replay file
// format (package replay) is this stream behind a magic and the same version number.
//
// # Hand-written encoders
//
// AppendFrame and AppendIdle write exactly what proto.Marshal writes for the same
// message; a test holds them to it. The field numbers they use are those of
// tickrelay.proto, written down once, in this package.
//
// # Concurrency
//
// The functions are safe for concurrent use. A Packer or an Unpacker follows one stream
// and has one owner.
package stream
