package hooks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// FuzzRecordEvents holds the path from a file's bytes to events — the tap's scan, the
// walk, the decoding and derive — to errors or events that encode, never a panic.
func FuzzRecordEvents(f *testing.F) {
	for _, msg := range []*pb.ServerMessage{
		{Msg: &pb.ServerMessage_Start{Start: &pb.Start{MatchId: "m", SimName: "s", Players: []*pb.Player{{Id: 1, Name: "a"}}}}},
		{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: pb.Event_KIND_JOINED, Player: 1}}},
		{Msg: &pb.ServerMessage_Desync{Desync: &pb.Desync{Tick: 9, Groups: []*pb.HashGroup{{Hash: 1, Players: []uint32{1}}}}}},
		{Msg: &pb.ServerMessage_End{End: &pb.End{Reason: pb.End_REASON_SIM_FINISHED, Detail: "x"}}},
	} {
		b, err := stream.AppendRecord(nil, msg)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01, 0x42, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = hasLifecycle(b)
		w := stream.NewWalker(b)
		var msg pb.ServerMessage
		for w.Next() {
			if stream.DecodeRecord(w.Record(), &msg) != nil {
				continue
			}
			if ev := derive(&msg); ev != nil {
				_, err := json.Marshal(ev)
				require.NoError(t, err)
			}
		}
	})
}

// FuzzCheckSignature holds the signature check to an error for any header and body but
// the right one, never a panic.
func FuzzCheckSignature(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add(Sign(secret, now, []byte("{}")), []byte("{}"))
	f.Add("t=1,v1=00,v1=zz", []byte(""))
	f.Add("", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := CheckSignature(secret, header, body, now, time.Minute)
		if err == nil {
			require.Contains(t, header, Sign(secret, now, body)[len("t=1800000000,"):])
		}
	})
}
