package relay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/stream"
)

// rawConn is a hand-driven WebSocket client, to send what a well-behaved client never
// would.
type rawConn struct {
	t testing.TB
	c *websocket.Conn
}

func (h *harness) raw() *rawConn {
	h.t.Helper()
	c, _, err := websocket.Dial(context.Background(), h.url, nil)
	require.NoError(h.t, err)
	c.SetReadLimit(1 << 20)
	h.t.Cleanup(func() { c.CloseNow() })
	return &rawConn{t: h.t, c: c}
}

func (r *rawConn) send(msg *pb.ClientMessage) {
	r.t.Helper()
	b, err := proto.Marshal(msg)
	require.NoError(r.t, err)
	r.sendBytes(websocket.MessageBinary, b)
}

func (r *rawConn) sendBytes(typ websocket.MessageType, b []byte) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(r.t, r.c.Write(ctx, typ, b))
}

func (r *rawConn) join(token string) *pb.Welcome {
	r.t.Helper()
	r.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: token}}})
	var w *pb.Welcome
	r.until(func(m *pb.ServerMessage) bool { w = m.GetWelcome(); return w != nil })
	return w
}

// until reads records until match returns true; it fails the test after 5 s.
func (r *rawConn) until(match func(*pb.ServerMessage) bool) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, b, err := r.c.Read(ctx)
		require.NoError(r.t, err)
		w := stream.NewWalker(b)
		for w.Next() {
			var m pb.ServerMessage
			require.NoError(r.t, w.Decode(&m, nil))
			if match(&m) {
				return
			}
		}
		require.NoError(r.t, w.Err())
	}
}

func (r *rawConn) expectError(code pb.ErrorCode) *pb.Error {
	r.t.Helper()
	var e *pb.Error
	r.until(func(m *pb.ServerMessage) bool { e = m.GetError(); return e != nil })
	assert.Equal(r.t, code, e.GetCode(), "reason: %s", e.GetReason())
	assert.NotEmpty(r.t, e.GetReason())
	return e
}

// closeStatus reads until the connection closes and returns its close status.
func (r *rawConn) closeStatus() websocket.StatusCode {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if _, _, err := r.c.Read(ctx); err != nil {
			require.False(r.t, errors.Is(err, context.DeadlineExceeded), "the relay did not close the connection")
			return websocket.CloseStatus(err)
		}
	}
}

func TestBadInputGetsAClearErrorAndNeverTouchesAnotherMatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{MessagesPerSecond: 50, MessageBurst: 20, MaxMessageBytes: 1024})
	// An honest match runs on the same relay through every attack below.
	honest := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 3})
	honestPeers := h.dialAll(honest, nil)
	target := h.create(relay.CreateRequest{Players: 2, LobbyTimeoutSeconds: 1, MaxDurationSeconds: 3})

	// Player 1 of the target match is driven by hand; player 2 by a bot.
	p1 := h.raw()
	require.Equal(t, uint32(1), p1.join(target.PlayerTokens[0]).GetPlayer())
	h.dialBot(target.PlayerTokens[1], 2, nil)
	p1.until(func(m *pb.ServerMessage) bool { return m.GetStart() != nil })

	badInputFromAPlayer(t, p1, target)
	badInputFromAConnection(t, h, target)

	// The honest match was untouched: it ran to its end, in sync, every command accepted.
	ends := waitEnd(t, honestPeers)
	for i, p := range honestPeers {
		assert.Equal(t, pb.End_REASON_MAX_DURATION, ends[i].GetReason())
		assert.Equal(t, honestPeers[0].sess.Sim().Hash(), p.sess.Sim().Hash())
		assert.Empty(t, p.desyncs)
		assert.Zero(t, p.sess.Reconnects())
		for _, a := range p.acks {
			assert.Equal(t, pb.Reject_REJECT_UNSPECIFIED, a.GetReject())
		}
	}
	rp := h.replayOf(honest.MatchID)
	_, err := replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err)
	assert.Empty(t, rp.Desyncs)
	// Timing is a measurement, not an assertion (tests never assert wall-clock speed).
	t.Logf("honest match under attack: frame-interval jitter p99 %v and %v at %d Hz", honestPeers[0].jitterP99(testRate), honestPeers[1].jitterP99(testRate), testRate)
}

// badInputFromAPlayer sends, from a joined player, what a player may not send, and what
// the relay ignores (a command's own player id): each gets its answer.
func badInputFromAPlayer(t *testing.T, p1 *rawConn, target *relay.CreateResponse) {
	t.Run("malformed protobuf is MALFORMED", func(t *testing.T) {
		p1.sendBytes(websocket.MessageBinary, []byte{0xff, 0xff, 0xff})
		p1.expectError(pb.ErrorCode_ERROR_CODE_MALFORMED)
	})
	t.Run("a text message is MALFORMED", func(t *testing.T) {
		p1.sendBytes(websocket.MessageText, []byte("hello"))
		e := p1.expectError(pb.ErrorCode_ERROR_CODE_MALFORMED)
		assert.Contains(t, e.GetReason(), "binary")
	})
	t.Run("an unknown oneof field is MALFORMED", func(t *testing.T) {
		b := protowire.AppendTag(nil, 99, protowire.BytesType)
		b = protowire.AppendBytes(b, []byte{1, 2})
		p1.sendBytes(websocket.MessageBinary, b)
		e := p1.expectError(pb.ErrorCode_ERROR_CODE_MALFORMED)
		assert.Contains(t, e.GetReason(), "no known field")
	})
	t.Run("a second join on one socket is UNEXPECTED", func(t *testing.T) {
		p1.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: target.PlayerTokens[0]}}})
		p1.expectError(pb.ErrorCode_ERROR_CODE_UNEXPECTED)
	})
	t.Run("a checksum for a tick not yet sealed is BAD_CHECKSUM", func(t *testing.T) {
		p1.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: &pb.Checksum{Tick: 29999, Hash: 1}}})
		e := p1.expectError(pb.ErrorCode_ERROR_CODE_BAD_CHECKSUM)
		assert.Contains(t, e.GetReason(), "not sealed")
	})
	t.Run("an oversized message is LIMIT", func(t *testing.T) {
		p1.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: 1, Payload: make([]byte, 1500)}}})
		e := p1.expectError(pb.ErrorCode_ERROR_CODE_LIMIT)
		assert.Contains(t, e.GetReason(), "1024")
	})
	t.Run("a command's player id is ignored: the relay's id wins", func(t *testing.T) {
		p1.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Player: 2, Seq: 7, Tick: 0, Payload: skirmish.AppendStop(nil, []uint32{1})}}})
		var ack *pb.CommandAck
		p1.until(func(m *pb.ServerMessage) bool { ack = m.GetCommandAck(); return ack != nil && ack.GetSeq() == 7 })
		require.Equal(t, pb.Reject_REJECT_UNSPECIFIED, ack.GetReject())
		var f *pb.Frame
		p1.until(func(m *pb.ServerMessage) bool { f = m.GetFrame(); return f != nil && f.GetTick() == ack.GetTick() })
		require.Len(t, f.GetCommands(), 1)
		assert.Equal(t, uint32(1), f.GetCommands()[0].GetPlayer())
	})
	t.Run("a reused seq is rejected with DUPLICATE_SEQ", func(t *testing.T) {
		p1.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: 7, Payload: []byte{1}}}})
		var ack *pb.CommandAck
		p1.until(func(m *pb.ServerMessage) bool { ack = m.GetCommandAck(); return ack != nil })
		assert.Equal(t, pb.Reject_REJECT_DUPLICATE_SEQ, ack.GetReject())
		assert.NotEmpty(t, ack.GetDetail())
	})
}

// badInputFromAConnection is what a connection of its own may not do: flood, send before
// joining, join with a token or a stream version the relay refuses, command as a
// spectator, abuse until closed.
func badInputFromAConnection(t *testing.T, h *harness, target *relay.CreateResponse) {
	t.Run("a flood is rate limited with LIMIT", func(t *testing.T) {
		c := h.raw()
		c.join(target.SpectatorToken)
		for i := 0; i < 30; i++ {
			c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: uint64(i)}}})
		}
		e := c.expectError(pb.ErrorCode_ERROR_CODE_LIMIT)
		assert.Contains(t, e.GetReason(), "per second")
	})

	t.Run("a command before join is UNEXPECTED", func(t *testing.T) {
		c := h.raw()
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: 1}}})
		c.expectError(pb.ErrorCode_ERROR_CODE_UNEXPECTED)
	})
	t.Run("a join with a forged token is BAD_TOKEN and closes", func(t *testing.T) {
		c := h.raw()
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: strings.Replace(target.PlayerTokens[0], "A", "B", 1) + "x"}}})
		c.expectError(pb.ErrorCode_ERROR_CODE_BAD_TOKEN)
		assert.Equal(t, websocket.StatusPolicyViolation, c.closeStatus())
	})
	t.Run("a join from a client that reads an older stream format is UPGRADE and closes", func(t *testing.T) {
		for _, v := range []uint32{0, 1} { // unset, and version 1 (no packed frames)
			c := h.raw()
			c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: v, Token: target.SpectatorToken}}})
			e := c.expectError(pb.ErrorCode_ERROR_CODE_UPGRADE)
			assert.Contains(t, e.GetReason(), "serves clients of version 2 and later; the client reads version")
			assert.Contains(t, e.GetReason(), "upgrade the client")
			assert.Equal(t, websocket.StatusPolicyViolation, c.closeStatus())
		}
	})
	t.Run("a client of the previous stream version is served the same stream", func(t *testing.T) {
		c := h.raw()
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.MinVersion, Token: target.SpectatorToken}}})
		var start *pb.Start
		c.until(func(m *pb.ServerMessage) bool { start = m.GetStart(); return start != nil })
		assert.Equal(t, target.MatchID, start.GetMatchId())
	})
	t.Run("a join with an expired token is BAD_TOKEN", func(t *testing.T) {
		tokens, err := relay.NewTokens([]byte("0123456789abcdef0123456789abcdef"))
		require.NoError(t, err)
		expired := tokens.Issue(relay.Claims{Match: uuid.MustParse(target.MatchID), Role: relay.RolePlayer, Slot: 1, Expiry: time.Now().Add(-time.Minute)})
		c := h.raw()
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: expired}}})
		e := c.expectError(pb.ErrorCode_ERROR_CODE_BAD_TOKEN)
		assert.Contains(t, e.GetReason(), "expired")
	})
	t.Run("a spectator sending a command is FORBIDDEN", func(t *testing.T) {
		c := h.raw()
		c.join(target.SpectatorToken)
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: 1, Payload: []byte{1}}}})
		c.expectError(pb.ErrorCode_ERROR_CODE_FORBIDDEN)
	})
	t.Run("repeated abuse closes with a policy violation", func(t *testing.T) {
		c := h.raw()
		c.join(target.SpectatorToken)
		for i := 0; i < 10; i++ {
			c.sendBytes(websocket.MessageBinary, []byte{0xff})
		}
		assert.Equal(t, websocket.StatusPolicyViolation, c.closeStatus())
	})
}

func TestConnectionLimits(t *testing.T) {
	t.Parallel()
	t.Run("a full relay refuses with FULL and try-again-later", func(t *testing.T) {
		h := newHarness(t, relay.Options{MaxConnections: 1})
		first := h.raw()
		resp := h.create(relay.CreateRequest{Players: 2})
		first.join(resp.PlayerTokens[0])
		second := h.raw()
		second.expectError(pb.ErrorCode_ERROR_CODE_FULL)
		assert.Equal(t, websocket.StatusTryAgainLater, second.closeStatus())
	})
	t.Run("a match with its spectator seats taken refuses with FULL", func(t *testing.T) {
		h := newHarness(t, relay.Options{MaxSpectators: 1})
		resp := h.create(relay.CreateRequest{Players: 2})
		h.raw().join(resp.SpectatorToken)
		c := h.raw()
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: resp.SpectatorToken}}})
		c.expectError(pb.ErrorCode_ERROR_CODE_FULL)
	})
	t.Run("a socket that never joins is closed after the join timeout", func(t *testing.T) {
		h := newHarness(t, relay.Options{JoinTimeout: 100 * time.Millisecond})
		c := h.raw()
		assert.Equal(t, relay.CloseJoinTimeout, c.closeStatus())
	})
	t.Run("a second connection with the same token replaces the first", func(t *testing.T) {
		h := newHarness(t, relay.Options{})
		resp := h.create(relay.CreateRequest{Players: 2})
		a := h.raw()
		a.join(resp.PlayerTokens[0])
		b := h.raw()
		assert.Equal(t, uint32(1), b.join(resp.PlayerTokens[0]).GetPlayer())
		assert.Equal(t, relay.CloseReplaced, a.closeStatus())
	})
}

func TestJoiningAnEndedMatchIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{LobbyTimeout: 10 * time.Millisecond}})
	<-h.srv.MatchDone(mustUUID(t, resp.MatchID))
	// The actor is gone but the match is still listed: every join must hear NO_MATCH,
	// never wait on a dead inbox.
	for i := 0; i < 20; i++ {
		c := h.raw()
		c.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{StreamVersion: stream.Version, Token: resp.PlayerTokens[i%2]}}})
		c.expectError(pb.ErrorCode_ERROR_CODE_NO_MATCH)
	}
}

func TestAPerAddressCapStopsAFloodOfConnections(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{MaxConnectionsPerAddress: 3})
	// Each of the three joins, so each is admitted before the fourth dials (an upgrade
	// completes before the relay counts the connection: three bare dials raced it).
	resp := h.create(relay.CreateRequest{Players: 3})
	for i := 0; i < 3; i++ {
		h.raw().join(resp.PlayerTokens[i])
	}
	c := h.raw()
	e := c.expectError(pb.ErrorCode_ERROR_CODE_FULL)
	assert.Contains(t, e.GetReason(), "per address")
	assert.Equal(t, websocket.StatusTryAgainLater, c.closeStatus())
}

func TestCommandsForTicksFarInThePastAndFuture(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 2})
	p1 := h.raw()
	p1.join(resp.PlayerTokens[0])
	h.dialBot(resp.PlayerTokens[1], 2, nil)
	var f *pb.Frame
	p1.until(func(m *pb.ServerMessage) bool { f = m.GetFrame(); return f != nil && f.GetTick() >= 100 })

	ack := func(seq uint32, tick uint64) *pb.CommandAck {
		p1.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: &pb.Command{Seq: seq, Tick: tick, Payload: []byte{1}}}})
		var a *pb.CommandAck
		p1.until(func(m *pb.ServerMessage) bool { a = m.GetCommandAck(); return a != nil && a.GetSeq() == seq })
		return a
	}
	past := ack(1, 0)
	assert.Equal(t, pb.Reject_REJECT_UNSPECIFIED, past.GetReject(), "a command for a long-sealed tick is placed, late")
	assert.Greater(t, past.GetTick(), uint64(100))
	future := ack(2, 1<<62)
	assert.Equal(t, pb.Reject_REJECT_TOO_FAR_AHEAD, future.GetReject())
	assert.Contains(t, future.GetDetail(), "max lead")
	var last *pb.CommandAck
	for seq := uint32(3); seq < 3+20; seq++ {
		last = ack(seq, 1<<20) // the same far tick, again and again: over the per-tick cap
	}
	assert.Equal(t, pb.Reject_REJECT_TOO_FAR_AHEAD, last.GetReject())
}

// Fetch is for a player whose frames go as datagrams: on WebSocket, where every frame
// is on the stream, it is an error that says so.
func TestAFetchOnWebSocketIsRefusedWithAReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2})
	r := h.raw()
	r.join(resp.PlayerTokens[0])
	r.send(&pb.ClientMessage{Msg: &pb.ClientMessage_Fetch{Fetch: &pb.Fetch{FromTick: 3}}})
	e := r.expectError(pb.ErrorCode_ERROR_CODE_UNEXPECTED)
	assert.Contains(t, e.GetReason(), "datagram_frames")
}
