package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/stream"
)

// FuzzClientMessage sends any bytes to a running relay as one player's message, through
// the whole path (decode, validate, act), then proves the relay is alive and still
// serving that connection (a ping gets its pong) — or that it closed the connection on
// purpose (abuse, a leave, a replacing join). A panic anywhere in the relay fails it.
func FuzzClientMessage(f *testing.F) {
	seed := func(m *pb.ClientMessage) []byte { b, _ := proto.Marshal(m); return b }
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: 1, Tick: 5, Payload: []byte{0x22, 0x02, 0x08, 0x01}}}}))
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Player: 2, Seq: 1 << 31, Tick: 1 << 63}}}))
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: &pb.Checksum{Tick: 29, Hash: 7, Over: true}}}))
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: &pb.Checksum{Tick: 29, Hash: 7, Over: true, Winner: 1 << 31}}}))
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: "x.y"}}}))
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{}}}))
	f.Add(seed(&pb.ClientMessage{Msg: &pb.ClientMessage_Pong{Pong: &pb.Pong{Nonce: 3}}}))
	f.Add([]byte{0xff, 0xff})
	f.Add([]byte{})

	// One relay and one running match serve every input.
	h := newHarness(f, relay.Options{MessagesPerSecond: 1e6, MessageBurst: 1 << 20})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{MaxDuration: time.Hour}})
	var conn *websocket.Conn
	var nonce uint64
	f.Cleanup(func() {
		if conn != nil {
			conn.CloseNow()
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if conn == nil {
			c, _, err := websocket.Dial(context.Background(), h.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			conn = c
			(&rawConn{t: t, c: c}).join(resp.PlayerTokens[0])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		nonce++
		ping, _ := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: nonce}}})
		if conn.Write(ctx, websocket.MessageBinary, data) != nil || conn.Write(ctx, websocket.MessageBinary, ping) != nil {
			conn = nil // closed by an earlier input
			return
		}
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				switch websocket.CloseStatus(err) {
				case websocket.StatusPolicyViolation, websocket.StatusNormalClosure, relay.CloseReplaced:
					conn = nil // closed on purpose: the next input gets a new connection
					return
				}
				t.Fatalf("the relay did not answer a ping after %x: %v", data, err)
			}
			w := stream.NewWalker(b)
			for w.Next() {
				var m pb.ServerMessage
				if w.Decode(&m, nil) == nil && m.GetPong().GetNonce() == nonce {
					return
				}
			}
			if w.Err() != nil {
				t.Fatalf("the relay sent a bad record: %v", w.Err())
			}
		}
	})
}
