package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// These tests play the relay's side of the protocol byte for byte, so that they can pin
// what the client does with each kind of record (the examples run it against a real
// relay).

// tallySim digests every tick and command it is stepped with.
type tallySim struct{ d sim.Digest }

func (s *tallySim) Step(tick uint64, cmds []sim.Command) {
	s.d.U64(tick)
	for _, c := range cmds {
		s.d.U32(c.Player)
		s.d.U32(c.Seq)
		s.d.Bytes(c.Payload)
	}
}
func (s *tallySim) Hash() uint64 { return s.d.Sum() }

func newTally(*pb.Start) (sim.Sim, error) { return &tallySim{d: sim.NewDigest()}, nil }

// scriptedRelay serves one WebSocket connection with script, on loopback; it returns
// the URL to dial.
func scriptedRelay(t *testing.T, script func(r *relaySide)) string {
	t.Helper()
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		script(&relaySide{t: t, c: c})
	}))
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

type relaySide struct {
	t *testing.T
	c *websocket.Conn
}

// read returns the client's next message.
func (r *relaySide) read() *pb.ClientMessage {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := r.c.Read(ctx)
	if err != nil {
		r.t.Errorf("the client's next message: %v", err)
		return &pb.ClientMessage{}
	}
	var m pb.ClientMessage
	assert.NoError(r.t, proto.Unmarshal(b, &m))
	return &m
}

// send writes records back to back as one message.
func (r *relaySide) send(records ...[]byte) {
	var b []byte
	for _, rec := range records {
		b = append(b, rec...)
	}
	assert.NoError(r.t, r.c.Write(context.Background(), websocket.MessageBinary, b))
}

// hold keeps the connection open, reading (which answers the client's close), until the
// client closes it, stop closes (nil: never) or 10 s pass.
func (r *relaySide) hold(stop <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		if _, _, err := r.c.Read(ctx); err != nil {
			return
		}
	}
}

func record(t *testing.T, msg *pb.ServerMessage) []byte {
	b, err := stream.AppendRecord(nil, msg)
	require.NoError(t, err)
	return b
}

func welcome(t *testing.T, w *pb.Welcome) []byte {
	return record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: w}})
}

func startRecord(t *testing.T, every uint32) []byte {
	return record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: &pb.Start{
		SimName: "tally", TickRate: 30, ChecksumEvery: every, Players: []*pb.Player{{Id: 1}, {Id: 2}},
	}}})
}

func endRecord(t *testing.T, last uint64) []byte {
	return record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: last, Reason: pb.End_REASON_ALL_LEFT}}})
}

func TestAPlayerAppliesWholePackedAndIdleRecordsInTickOrderAndReportsItsChecksums(t *testing.T) {
	f0 := lockstep.Frame{Tick: 0, Commands: []sim.Command{{Player: 2, Seq: 1, Payload: []byte("a")}}}
	f1 := lockstep.Frame{Tick: 1, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: []byte("b")}, {Player: 2, Seq: 2}}}
	// What the client must compute: the same sim through ticks 0..4.
	want := &tallySim{d: sim.NewDigest()}
	peer := lockstep.NewPeer(want, lockstep.PeerOptions{})
	var wantHash [5]uint64
	for tick := uint64(0); tick < 5; tick++ {
		f := lockstep.Frame{Tick: tick}
		switch tick {
		case 0:
			f = f0
		case 1:
			f = f1
		}
		_, _, err := peer.Apply(f)
		require.NoError(t, err)
		wantHash[tick] = want.Hash()
	}

	url := scriptedRelay(t, func(r *relaySide) {
		join := r.read().GetJoin()
		assert.Equal(t, "tok", join.GetToken())
		assert.Equal(t, uint32(stream.Version), join.GetStreamVersion(), "the client states the stream version it reads")
		p := stream.NewPacker(2)
		frame0 := p.AppendFrame(nil, f0)
		packed1 := p.AppendPacked(nil, f1)
		r.send(welcome(t, &pb.Welcome{Player: 1, InputDelay: 2}), startRecord(t, 2), frame0, packed1, stream.AppendIdle(nil, 4))
		for _, tick := range []uint64{1, 3} { // checkpoints: (t+1) % 2 == 0
			var cs *pb.Checksum
			for cs == nil {
				cs = r.read().GetChecksum()
			}
			assert.Equal(t, tick, cs.GetTick())
			assert.Equal(t, wantHash[tick], cs.GetHash(), "the checksum of tick %d", tick)
		}
		r.send(endRecord(t, 4))
		_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
	})

	var ticks []uint64
	var cmds []int
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{
		NewSim: newTally, PingInterval: -1, NoReconnect: true,
		OnTick: func(_ *client.Session, f lockstep.Frame) {
			ticks = append(ticks, f.Tick)
			cmds = append(cmds, len(f.Commands))
		},
	})
	require.NoError(t, err)
	assert.Equal(t, uint32(1), s.Player())
	end, err := s.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, pb.End_REASON_ALL_LEFT, end.GetReason())
	assert.Equal(t, []uint64{0, 1, 2, 3, 4}, ticks)
	assert.Equal(t, []int{1, 2, 0, 0, 0}, cmds, "the packed tick unpacks to its two commands")
	assert.Equal(t, wantHash[4], s.Sim().Hash())
	last, ok := s.LastTick()
	assert.True(t, ok)
	assert.Equal(t, uint64(4), last)
}

func TestSendTargetsTheNextTickPlusTheInputDelayAndFailsAfterTheEnd(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read() // join
		r.send(welcome(t, &pb.Welcome{Player: 2, InputDelay: 3}), startRecord(t, 100), stream.AppendIdle(nil, 9))
		var cmd *pb.Command
		for cmd == nil {
			cmd = r.read().GetCommand()
		}
		assert.Equal(t, uint64(9+1+3), cmd.GetTick(), "last sealed tick + 1 + input delay")
		assert.Equal(t, uint32(1), cmd.GetSeq())
		assert.Equal(t, "move", string(cmd.GetPayload()))
		r.send(endRecord(t, 9))
		_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
	})
	sent := make(chan struct{})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{
		NewSim: newTally, PingInterval: -1, NoReconnect: true,
		OnTick: func(s *client.Session, f lockstep.Frame) {
			if f.Tick == 9 {
				seq, target, err := s.Send([]byte("move"))
				assert.NoError(t, err)
				assert.Equal(t, uint32(1), seq)
				assert.Equal(t, uint64(13), target)
				close(sent)
			}
		},
	})
	require.NoError(t, err)
	_, err = s.Wait(context.Background())
	require.NoError(t, err)
	<-sent
	_, _, err = s.Send([]byte("late"))
	assert.ErrorIs(t, err, client.ErrEnded)
}

func TestAPayloadOverTheAnnouncedLimitIsNotSentAndTakesNoSeq(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read() // join
		r.send(welcome(t, &pb.Welcome{Player: 1, InputDelay: 1, Limits: &pb.Limits{MaxPayload: 4}}), startRecord(t, 100), stream.AppendIdle(nil, 9))
		var cmd *pb.Command
		for cmd == nil {
			cmd = r.read().GetCommand()
		}
		assert.Equal(t, uint32(1), cmd.GetSeq(), "the refused payload took no seq")
		assert.Equal(t, "fits", string(cmd.GetPayload()))
		r.send(endRecord(t, 9))
		_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	require.NoError(t, err)
	assert.Equal(t, uint32(4), s.Limits().GetMaxPayload())
	_, _, err = s.Send([]byte("too long"))
	require.ErrorIs(t, err, client.ErrPayloadTooLarge)
	assert.Contains(t, err.Error(), "8 bytes, the relay takes at most 4")
	seq, _, err := s.Send([]byte("fits"))
	require.NoError(t, err)
	assert.Equal(t, uint32(1), seq)
	_, err = s.Wait(context.Background())
	require.NoError(t, err)
}

func TestARelayThatRefusesTheJoinIsARelayError(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: pb.ErrorCode_ERROR_CODE_BAD_TOKEN, Reason: "expired"}}}))
	})
	_, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1})
	var rerr *client.RelayError
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_BAD_TOKEN, rerr.Code)
	assert.Equal(t, "expired", rerr.Reason)
}

func TestBytesThatAreNotRecordsEndTheSessionWithAnError(t *testing.T) {
	for name, bad := range map[string][]byte{
		"a cut record":                           {0x0a, 0x10, 0x08},
		"a packed frame with no start before it": {0x6a, 0x03, 0x01, 0x02, 0x00},
		"a frame before the start":               stream.AppendFrame(nil, lockstep.Frame{Tick: 0}),
		"a record that is not a ServerMessage":   {0x0a, 0x02, 0xff, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			url := scriptedRelay(t, func(r *relaySide) {
				r.read()
				r.send(welcome(t, &pb.Welcome{Player: 1}))
				r.send(bad)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _, _ = r.c.Read(ctx) // until the client closes
			})
			s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = s.Wait(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "client:")
		})
	}
}

func TestARecordFromANewerRelayIsSkipped(t *testing.T) {
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		newer := []byte{0xfa, 0x01, 0x00} // field 31: no such record in this build
		r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100), newer, stream.AppendIdle(nil, 2), endRecord(t, 2))
		_ = r.c.Close(websocket.StatusNormalClosure, "match ended")
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	require.NoError(t, err)
	_, err = s.Wait(context.Background())
	require.NoError(t, err)
	last, _ := s.LastTick()
	assert.Equal(t, uint64(2), last)
}

func TestAReplacedSessionEndsWithoutTakingTheSlotBack(t *testing.T) {
	var conns atomic.Int32
	url := scriptedRelay(t, func(r *relaySide) {
		conns.Add(1)
		r.read()
		r.send(welcome(t, &pb.Welcome{Player: 1}))
		_ = r.c.Close(websocket.StatusCode(pb.CloseCode_CLOSE_CODE_REPLACED), "replaced by a new connection with the same token")
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, ReconnectMin: time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.Wait(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CLOSE_CODE_REPLACED")
	assert.Equal(t, int32(1), conns.Load(), "no reconnect")
	assert.Zero(t, s.Reconnects())
}
