package stream

import (
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// AppendAck appends a ServerMessage{command_ack} record: what proto.Marshal would write,
// without its allocations. Acks are per command, so they are the relay's most frequent
// message after frames; a test holds this encoder to proto.Marshal.
func AppendAck(dst []byte, a *pb.CommandAck) []byte {
	body := 0
	if a.Seq != 0 {
		body += 1 + protowire.SizeVarint(uint64(a.Seq))
	}
	if a.Tick != 0 {
		body += 1 + protowire.SizeVarint(a.Tick)
	}
	if a.Reject != 0 {
		body += 1 + protowire.SizeVarint(uint64(a.Reject))
	}
	if a.Detail != "" {
		body += 1 + protowire.SizeBytes(len(a.Detail))
	}
	dst = protowire.AppendTag(dst, fieldCommandAck, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(body))
	if a.Seq != 0 {
		dst = protowire.AppendTag(dst, ackSeq, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(a.Seq))
	}
	if a.Tick != 0 {
		dst = protowire.AppendTag(dst, ackTick, protowire.VarintType)
		dst = protowire.AppendVarint(dst, a.Tick)
	}
	if a.Reject != 0 {
		dst = protowire.AppendTag(dst, ackReject, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(a.Reject))
	}
	if a.Detail != "" {
		dst = protowire.AppendTag(dst, ackDetail, protowire.BytesType)
		dst = protowire.AppendString(dst, a.Detail)
	}
	return dst
}
