package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/stream"
)

// The wire contract as a client in another language reads it in tickrelay.proto: each
// test pins one sentence of it.

// readToClose reads records until the relay closes the connection, and returns them with
// the close status and reason.
func (r *rawConn) readToClose() (recs []*pb.ServerMessage, code websocket.StatusCode, reason string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, b, err := r.c.Read(ctx)
		if err != nil {
			require.NotErrorIs(r.t, err, context.DeadlineExceeded, "the relay did not close the connection")
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return recs, ce.Code, ce.Reason
			}
			return recs, websocket.CloseStatus(err), ""
		}
		w := stream.NewWalker(b)
		for w.Next() {
			m := &pb.ServerMessage{}
			require.NoError(r.t, w.Decode(m, nil))
			recs = append(recs, m)
		}
		require.NoError(r.t, w.Err())
	}
}

func TestACommandFromAConnectionKickedForAbuseGetsItsAckOrIsNotInTheStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2})
	p1 := h.raw()
	p1.join(resp.PlayerTokens[0])
	bot := h.dialBot(resp.PlayerTokens[1], 2, nil)
	p1.until(func(m *pb.ServerMessage) bool { return m.GetFrame().GetTick() >= 30 })

	// One burst: enough malformed messages to be kicked (8 strikes, the 9th closes), then
	// commands the relay reads after it decided to close the connection.
	var burst [][]byte
	for i := 0; i < 12; i++ {
		burst = append(burst, []byte{0xff})
	}
	for seq := uint32(1); seq <= 40; seq++ {
		b, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: seq, Payload: []byte{byte(seq)}}}})
		require.NoError(t, err)
		burst = append(burst, b)
	}
	for _, b := range burst {
		p1.sendBytes(websocket.MessageBinary, b)
	}
	recs, code, reason := p1.readToClose()
	assert.Equal(t, websocket.StatusPolicyViolation, code)
	assert.Contains(t, reason, "protocol errors")
	acked := map[uint32]bool{}
	for _, m := range recs {
		if a := m.GetCommandAck(); a != nil && a.GetReject() == pb.Reject_REJECT_UNSPECIFIED {
			acked[a.GetSeq()] = true
		}
	}

	waitEnd(t, []*peer{bot})
	rp := h.replayOf(resp.MatchID)
	for _, f := range rp.Frames {
		for _, c := range f.Commands {
			if c.Player == 1 {
				assert.True(t, acked[c.Seq], "player 1's seq %d is in the stream at tick %d but was never acked", c.Seq, f.Tick)
			}
		}
	}
}

func TestAFloodOfValidMessagesBeforeJoinClosesWithPolicyViolationAndAReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	c := h.raw()
	for i := 0; i < 20; i++ {
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: uint64(i)}}})
	}
	recs, code, reason := c.readToClose()
	assert.Equal(t, websocket.StatusPolicyViolation, code, "a close frame with a code, not a bare drop (1006)")
	assert.Contains(t, reason, "join")
	require.NotEmpty(t, recs)
	for _, m := range recs {
		assert.Equal(t, pb.ErrorCode_ERROR_CODE_UNEXPECTED, m.GetError().GetCode())
	}
}

func TestWelcomeAnnouncesTheConnectionsLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{MaxMessageBytes: 2000, MessagesPerSecond: 77, MessageBurst: 99,
		Match: relay.MatchOptions{MaxPayload: 123, MaxCommandsPerTick: 5}})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{MaxPayload: 100}})
	for _, tok := range []string{resp.PlayerTokens[0], resp.SpectatorToken} {
		l := h.raw().join(tok).GetLimits()
		require.NotNil(t, l)
		assert.Equal(t, uint32(2000), l.GetMaxMessageBytes())
		assert.Equal(t, uint32(100), l.GetMaxPayload(), "the match's own option wins over the server's")
		assert.Equal(t, 77.0, l.GetMessagesPerSecond())
		assert.Equal(t, uint32(99), l.GetMessageBurst())
		assert.Equal(t, uint32(5), l.GetMaxCommandsPerTick())
		assert.Equal(t, uint32(8), l.GetMaxStrikes())
		assert.InDelta(t, 0.2, l.GetStrikesPerSecond(), 1e-9)
	}
}

func TestTheRelaysCloseCodesAreTheProtocolsCloseCodes(t *testing.T) {
	t.Parallel()
	assert.Equal(t, websocket.StatusCode(pb.CloseCode_CLOSE_CODE_REPLACED), relay.CloseReplaced)
	assert.Equal(t, websocket.StatusCode(pb.CloseCode_CLOSE_CODE_TOO_SLOW), relay.CloseTooSlow)
	assert.Equal(t, websocket.StatusCode(pb.CloseCode_CLOSE_CODE_JOIN_TIMEOUT), relay.CloseJoinTimeout)
	for code, std := range map[pb.CloseCode]websocket.StatusCode{
		pb.CloseCode_CLOSE_CODE_NORMAL:           websocket.StatusNormalClosure,
		pb.CloseCode_CLOSE_CODE_GOING_AWAY:       websocket.StatusGoingAway,
		pb.CloseCode_CLOSE_CODE_POLICY_VIOLATION: websocket.StatusPolicyViolation,
		pb.CloseCode_CLOSE_CODE_MESSAGE_TOO_BIG:  websocket.StatusMessageTooBig,
		pb.CloseCode_CLOSE_CODE_TRY_AGAIN_LATER:  websocket.StatusTryAgainLater,
	} {
		assert.Equal(t, std, websocket.StatusCode(code), "%s", code)
	}
}

// A player joining a running match gets its catch-up as the stream's own bytes (packed
// and Idle records included, as tickrelay.proto says), then every live tick as a whole
// Frame, never packed or Idle.
func TestAPlayerJoiningARunningMatchCatchesUpOnTheStreamThenGetsLiveFrames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 3, LobbyTimeoutSeconds: 1})
	bot := h.dialBot(resp.PlayerTokens[0], 1, nil)
	require.Eventually(t, func() bool { tick, ok := bot.sess.LastTick(); return ok && tick >= 200 }, 10*time.Second, 5*time.Millisecond)

	late := h.raw()
	w := late.join(resp.PlayerTokens[1])
	require.NotNil(t, w.SealedTick)
	sealed := w.GetSealedTick()
	var kinds []string
	var idle, packed, liveFrames, liveOther int
	late.until(func(m *pb.ServerMessage) bool {
		switch {
		case m.GetStart() != nil:
			kinds = append(kinds, "start")
		case m.GetIdle() != nil || m.GetPacked() != nil:
			if liveFrames > 0 {
				liveOther++
			} else if m.GetIdle() != nil {
				idle++
			} else {
				packed++
			}
		case m.GetFrame() != nil:
			if m.GetFrame().GetTick() > sealed {
				liveFrames++
			}
		}
		return liveFrames >= 100
	})
	assert.Zero(t, liveOther, "no packed or Idle record after the first live Frame")
	assert.Equal(t, []string{"start"}, kinds)
	assert.Positive(t, idle+packed, "the catch-up is the stream's coding, packed and Idle records included")
	assert.Equal(t, 100, liveFrames, "every live tick is a whole Frame")
}
