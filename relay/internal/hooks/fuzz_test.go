package hooks

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
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

// FuzzOutcome holds the outcome to an answer that encodes, never a panic, for any claims
// a file's checkpoints may carry: over and winners lists of any lengths and values (an
// older relay's, a damaged or hostile file's), with and without the relay's sim.
func FuzzOutcome(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte{3, 3, 3}, uint8(3), false, true)
	f.Add([]byte{1, 2}, []byte{1, 2}, uint8(2), true, true)
	f.Add([]byte{2, 1, 2}, []byte{9}, uint8(2), true, false)
	f.Add([]byte{}, []byte{200, 0}, uint8(1), false, false)
	f.Fuzz(func(t *testing.T, over, winners []byte, players uint8, withSim, finished bool) {
		if len(over) > 64 || len(winners) > 64 || players == 0 || players > 64 {
			return // a match has a few players; the claims' shape is what matters
		}
		name := "not-here"
		if withSim {
			name = decidedName
		}
		start := &pb.Start{MatchId: "m", SimName: name, SimVersion: 1, ChecksumEvery: 10}
		for i := range players {
			start.Players = append(start.Players, &pb.Player{Id: uint32(i) + 1})
		}
		start.ConfigHash = replay.ConfigHash(start)
		var b bytes.Buffer
		w, err := replay.NewWriter(&b, start, nil)
		require.NoError(t, err)
		for tick := range uint64(10) {
			require.NoError(t, w.Frame(lockstep.Frame{Tick: tick}))
		}
		cp := &pb.Checkpoint{Tick: 9, Hash: 1}
		for _, p := range over {
			cp.Over = append(cp.Over, uint32(p))
		}
		for _, v := range winners {
			cp.Winners = append(cp.Winners, uint32(v))
		}
		require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: cp}}))
		reason := pb.End_REASON_ALL_LEFT
		if finished {
			reason = pb.End_REASON_SIM_FINISHED
		}
		require.NoError(t, w.Close(&pb.End{Reason: reason}))
		out := outcome(bytes.NewReader(b.Bytes()), int64(b.Len()))
		_, err = json.Marshal(out)
		require.NoError(t, err)
		if out.ReportedWinner != nil {
			require.Positive(t, out.WinnerAgreed, "a reported winner is one some players named")
		}
	})
}
