package relay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

func TestAppendAckEncodesExactlyWhatProtoMarshalDoes(t *testing.T) {
	for _, a := range []*pb.CommandAck{
		{},
		{Seq: 1, Tick: 42},
		{Seq: 1 << 31, Tick: 1 << 40},
		{Seq: 9, Reject: pb.Reject_REJECT_TOO_FAR_AHEAD, Detail: "the last sealed tick is 4 and the max lead is 60"},
	} {
		want, err := proto.Marshal(&pb.ServerMessage{Msg: &pb.ServerMessage_CommandAck{CommandAck: a}})
		require.NoError(t, err)
		assert.Equal(t, want, appendAck(nil, a), "%v", a)
	}
}

func TestAnAcceptedAckAllocatesNothing(t *testing.T) {
	pool := newMessagePool(4)
	a := pb.CommandAck{Seq: 7, Tick: 100}
	allocs := testing.AllocsPerRun(100, func() {
		m := pool.get()
		m.b = appendAck(m.b, &a)
		m.release()
	})
	assert.Zero(t, allocs)
}
