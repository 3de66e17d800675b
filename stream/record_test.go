package stream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

func TestAppendFrameEncodesExactlyWhatProtoMarshalDoes(t *testing.T) {
	frames := map[string]lockstep.Frame{
		"tick 0 with no commands":  {Tick: 0},
		"a late tick with none":    {Tick: 1 << 40},
		"one command":              {Tick: 20000, Commands: []sim.Command{{Player: 1, Seq: 7, Payload: []byte("12345678")}}},
		"zero seq and empty bytes": {Tick: 3, Commands: []sim.Command{{Player: 2}}},
		"many commands": {Tick: 99, Commands: []sim.Command{
			{Player: 1, Seq: 1, Payload: []byte{1}}, {Player: 1, Seq: 300, Payload: make([]byte, 200)}, {Player: 8, Seq: 1 << 31, Payload: []byte{0}},
		}},
	}
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			msg := &pb.Frame{Tick: f.Tick}
			for _, c := range f.Commands {
				msg.Commands = append(msg.Commands, &pb.Command{Player: c.Player, Seq: c.Seq, Payload: c.Payload})
			}
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: msg}})
			require.NoError(t, err)
			assert.Equal(t, want, stream.AppendFrame(nil, f))
		})
	}
}

func TestAppendIdleEncodesExactlyWhatProtoMarshalDoes(t *testing.T) {
	for _, through := range []uint64{0, 1, 511, 1 << 33} {
		want, err := proto.Marshal(&pb.ServerMessage{Msg: &pb.ServerMessage_Idle{Idle: &pb.Idle{ThroughTick: through}}})
		require.NoError(t, err)
		assert.Equal(t, want, stream.AppendIdle(nil, through))
	}
}

func TestAppendAckEncodesExactlyWhatProtoMarshalDoes(t *testing.T) {
	for _, a := range []*pb.CommandAck{
		{},
		{Seq: 1, Tick: 42},
		{Seq: 1 << 31, Tick: 1 << 40},
		{Seq: 9, Reject: pb.Reject_REJECT_TOO_FAR_AHEAD, Detail: "the last sealed tick is 4 and the max lead is 60"},
	} {
		want, err := proto.Marshal(&pb.ServerMessage{Msg: &pb.ServerMessage_CommandAck{CommandAck: a}})
		require.NoError(t, err)
		assert.Equal(t, want, stream.AppendAck(nil, a), "%v", a)
	}
}

func TestAppendFrameDoesNotAllocateIntoACapableBuffer(t *testing.T) {
	f := lockstep.Frame{Tick: 12345, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: []byte("payload!")}, {Player: 2, Seq: 9, Payload: []byte("x")}}}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() { buf = stream.AppendFrame(buf[:0], f) })
	assert.Zero(t, allocs)
}

func TestSplitRecordWalksConcatenatedRecords(t *testing.T) {
	var b []byte
	b = stream.AppendFrame(b, lockstep.Frame{Tick: 5, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: []byte("a")}}})
	b = stream.AppendIdle(b, 40)
	b, err := stream.AppendRecord(b, &pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: &pb.Checkpoint{Tick: 29, Hash: 0xfeed}}})
	require.NoError(t, err)

	assert.Equal(t, []string{"frame", "idle", "checkpoint"}, recordNames(t, b))
}

func TestSplitRecordRejectsWhatIsNotAWholeRecord(t *testing.T) {
	whole := stream.AppendIdle(nil, 40)
	tests := map[string][]byte{
		"empty":                  {},
		"cut in the body":        whole[:len(whole)-1],
		"a varint field":         {0x08, 0x01},
		"an overlong length":     {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"a tag that never ends":  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"field number zero (00)": {0x02, 0x00},
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			n, err := stream.SplitRecord(b)
			if name == "field number zero (00)" {
				// SplitRecord only delimits; DecodeRecord refuses the content.
				if err == nil {
					assert.Error(t, stream.DecodeRecord(b[:n], &pb.ServerMessage{}))
				}
				return
			}
			assert.Error(t, err)
			assert.Zero(t, n)
		})
	}
}

func TestAppendRecordNeedsAMessage(t *testing.T) {
	_, err := stream.AppendRecord(nil, &pb.ServerMessage{})
	assert.Error(t, err)
}

// recordNames walks b as records back to back and names each.
func recordNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	for len(b) > 0 {
		n, err := stream.SplitRecord(b)
		require.NoError(t, err)
		var msg pb.ServerMessage
		require.NoError(t, stream.DecodeRecord(b[:n], &msg))
		names = append(names, stream.RecordName(&msg))
		b = b[n:]
	}
	return names
}

func TestDecodeErrorsSayWhetherAReaderMaySkipTheRecord(t *testing.T) {
	var msg pb.ServerMessage
	err := stream.DecodeRecord([]byte{0xfa, 0x01, 0x00}, &msg) // field 31, empty: a newer relay's record
	assert.ErrorIs(t, err, stream.ErrUnknownRecord)
	err = stream.DecodeRecord([]byte{0x0a, 0x02, 0x08}, &msg) // a frame whose body is cut
	assert.ErrorIs(t, err, stream.ErrRecord)
	assert.NotErrorIs(t, err, stream.ErrUnknownRecord)
	_, err = stream.SplitRecord([]byte{0x0a, 0x10})
	assert.ErrorIs(t, err, stream.ErrRecord)
	var u stream.Unpacker
	assert.ErrorIs(t, u.Expand(&pb.ServerMessage{Msg: &pb.ServerMessage_Packed{Packed: []byte{1, 2, 0}}}), stream.ErrPacked)
	_, err = stream.AppendRecord(nil, &pb.ServerMessage{})
	assert.ErrorIs(t, err, stream.ErrNoMessage)
}
