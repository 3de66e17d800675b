package stream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// The hand-written field numbers are the generated descriptors' own.
func TestTheHandWrittenFieldNumbersAreThoseOfTheProto(t *testing.T) {
	num := func(m interface{ ProtoReflect() protoreflect.Message }, field protoreflect.Name) int {
		fd := m.ProtoReflect().Descriptor().Fields().ByName(field)
		if fd == nil {
			t.Fatalf("%s has no field %s", m.ProtoReflect().Descriptor().FullName(), field)
		}
		return int(fd.Number())
	}
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"ServerMessage.frame", fieldFrame, num(&pb.ServerMessage{}, "frame")},
		{"ServerMessage.idle", fieldIdle, num(&pb.ServerMessage{}, "idle")},
		{"ServerMessage.command_ack", fieldCommandAck, num(&pb.ServerMessage{}, "command_ack")},
		{"ServerMessage.packed", fieldPacked, num(&pb.ServerMessage{}, "packed")},
		{"ServerMessage.crc", fieldCRC, num(&pb.ServerMessage{}, "crc")},
		{"Frame.tick", frameTick, num(&pb.Frame{}, "tick")},
		{"Frame.commands", frameCommands, num(&pb.Frame{}, "commands")},
		{"Command.player", commandPlayer, num(&pb.Command{}, "player")},
		{"Command.seq", commandSeq, num(&pb.Command{}, "seq")},
		{"Command.payload", commandPayload, num(&pb.Command{}, "payload")},
		{"Idle.through_tick", idleThrough, num(&pb.Idle{}, "through_tick")},
		{"CommandAck.seq", ackSeq, num(&pb.CommandAck{}, "seq")},
		{"CommandAck.tick", ackTick, num(&pb.CommandAck{}, "tick")},
		{"CommandAck.reject", ackReject, num(&pb.CommandAck{}, "reject")},
		{"CommandAck.detail", ackDetail, num(&pb.CommandAck{}, "detail")},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}
