package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/internal/wsconn"
	"github.com/tickrelay/tickrelay/stream"
)

// WebSocket close codes of the relay's own, defined (and documented) once in the protocol
// as tickrelay.v1.CloseCode; the standard ones it uses (1000 normal closure at the end of
// a match, 1001 going away at shutdown, 1008 policy violation for repeated abuse, 1009
// message too big, 1013 try again later when the relay is full) are listed there too.
const (
	// CloseReplaced: a new connection joined with the same player token.
	CloseReplaced = websocket.StatusCode(pb.CloseCode_CLOSE_CODE_REPLACED)
	// CloseTooSlow: the connection's send queue was full; the client did not read.
	CloseTooSlow = websocket.StatusCode(pb.CloseCode_CLOSE_CODE_TOO_SLOW)
	// CloseJoinTimeout: no join message arrived in time.
	CloseJoinTimeout = websocket.StatusCode(pb.CloseCode_CLOSE_CODE_JOIN_TIMEOUT)
)

// maxStrikes and abuseRate: a connection may send 8 bad messages in a burst, and one
// every 5 s after that, before it is closed with a policy violation. Welcome.limits
// announces both.
const (
	maxStrikes = 8
	abuseRate  = rate.Limit(0.2)
)

// queueReserve is the room a send queue keeps above its limit: a producer that saw room
// below the limit (the match actor placing a command, the reader answering a ping) may
// race another by one message, and an ack the actor decided to send must always fit.
const queueReserve = 4

// session is one WebSocket connection. Its reader (run) runs on a goroutine serveWS
// starts, which the Server's connWG tracks; its writer (writeLoop) is a goroutine run
// starts and waits for, which drains the bounded send queue. The match actor never
// blocks on a session: it writes a frame to an idle connection with one non-blocking
// write (deliver), queues shared messages otherwise and, if the queue is full, kicks
// the session (CloseTooSlow).
type session struct {
	srv  *Server
	conn *websocket.Conn
	// raw is the connection under conn, or nil: pre-framed messages (message.framed)
	// are written to it in one call, under its lock, which the library's writes take too
	// (package wsconn). The match actor writes a frame itself when nothing is queued
	// (deliver).
	raw *wsconn.Conn
	// dg is the connection's datagrams when it came over WebTransport, else nil
	// (datagram.go).
	dg datagramConn
	// datagramFrames: a player on WebTransport that takes its live frames from the
	// datagrams alone (fetch.go); set at the join. fetchedTo is the tick after the last
	// frame a Fetch put on its stream (the match's actor only).
	datagramFrames bool
	fetchedTo      uint64
	remote         string // the peer address, for logs
	ctx            context.Context
	cancel         context.CancelFunc
	send           chan *message
	// pending counts the messages queued and not yet written (or dropped): deliver
	// writes directly only when it is 0, so nothing overtakes what is queued.
	pending atomic.Int32

	// kickMu orders a kick against the match placing a command: a command is placed
	// and its ack queued either wholly before the kick (the writer delivers the ack
	// before it closes) or not at all.
	kickMu     sync.Mutex
	kickOnce   sync.Once
	kicked     chan struct{}
	kickCode   websocket.StatusCode
	kickReason string
	writerDone chan struct{}
	limiter    *rate.Limiter
	rbuf       bytes.Buffer // the reader's message buffer, reused
	strikes    atomic.Int32 // protocol errors so far, for the log
	abuse      *rate.Limiter
	claims     Claims
	match      *match
	delay      delayEstimator
	// inboxed counts this session's commands and checksums in its match's inbox, not
	// yet handled: while any is, the next ones go through the inbox too (tickq.go).
	inboxed      atomic.Int32
	joinedAt     time.Time
	resumeFrom   *uint64
	resumeOffset *uint64
	sent         int // owned by the match: stream bytes queued to this spectator
	// awaitSent (owned by the match): sent is the byte a resuming spectator asked for,
	// past what the match has released yet; it gets nothing until the stream reaches it.
	awaitSent bool
	ackMu     sync.Mutex
	acks      []byte // pre-framed acks held for the writer's next write (holdAck)
	wbuf      []byte // the writer's: held acks and a message, written at once
}

func newSession(srv *Server, conn *websocket.Conn, remote string) *session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{
		srv: srv, conn: conn, remote: remote, ctx: ctx, cancel: cancel,
		send:       make(chan *message, max(srv.opts.SendQueue, srv.opts.SpectatorQueue)+queueReserve),
		kicked:     make(chan struct{}),
		writerDone: make(chan struct{}),
		limiter:    rate.NewLimiter(rate.Limit(srv.opts.MessagesPerSecond), srv.opts.MessageBurst),
		abuse:      rate.NewLimiter(abuseRate, maxStrikes),
	}
	// The library closes a connection (1009) past its read limit without a word; set it
	// at twice the relay's limit so that a moderately oversized message gets an Error
	// the client can act on, and memory stays bounded either way.
	conn.SetReadLimit(2 * srv.opts.MaxMessageBytes)
	return s
}

// enqueue queues m (adding a reference) without blocking. A full queue kicks the session:
// a player that does not read cannot be allowed to hold frames the others need.
func (s *session) enqueue(m *message) bool {
	if s.isKicked() {
		// A kicked connection takes nothing more: a player must never get a frame after
		// one it missed (it rejoins and resumes instead).
		return false
	}
	if !s.hasRoom() {
		s.tooSlow(s.queueLimit())
		return false
	}
	if !s.push(m) {
		s.tooSlow(cap(s.send))
		return false
	}
	return true
}

// push queues m (adding a reference) if the channel has room, reserve included.
func (s *session) push(m *message) bool {
	m.refs.Add(1)
	s.pending.Add(1)
	select {
	case s.send <- m:
		return true
	default:
		s.pending.Add(-1)
		m.release()
		return false
	}
}

// deliver is enqueue without the hand-off when the connection is idle: with nothing
// queued or being written, the caller (the match actor, or the reader answering a ping)
// writes the message (and the acks held for it) itself, in one non-blocking write. What
// the socket does not take of it is kept as the connection's rest, which the next
// writer writes first, and the session's writer is woken to do so. The caller never
// blocks: a connection being written to takes the queue.
func (s *session) deliver(m *message) bool {
	r := s.raw
	if r == nil || !r.NonBlocking() || len(m.framed) == 0 || !r.TryLock() {
		return s.enqueue(m)
	}
	if s.pending.Load() > 0 || !r.Idle() || s.isKicked() {
		r.Unlock()
		return s.enqueue(m)
	}
	cut, err := r.TryWriteLocked(s.heldAcks(m.framed))
	r.Unlock()
	if err != nil {
		s.stop() // the connection failed: the reader ends the session
		return false
	}
	if cut {
		// Wake the writer to finish the frame (an empty message writes only the rest and
		// the held acks); if the queue is full, whatever is queued does it.
		wake := oneOff(nil)
		s.push(wake)
		wake.release()
	}
	return true
}

// queueLimit is how many messages the session's queue holds before it is too slow.
func (s *session) queueLimit() int {
	if s.claims.Role == RoleSpectator {
		return s.srv.opts.SpectatorQueue
	}
	return s.srv.opts.SendQueue
}

// hasRoom reports whether the queue is below its limit.
func (s *session) hasRoom() bool { return len(s.send) < s.queueLimit() }

func (s *session) isKicked() bool {
	select {
	case <-s.kicked:
		return true
	default:
		return false
	}
}

// placeCommand runs place, which puts a command in the stream and returns its encoded
// ack, and queues the ack, only if the session is not kicked and its queue has room;
// else the command is dropped (not in the stream, no ack) and a full queue kicks the
// session as too slow. So a command the relay read either gets its ack or is not in the
// stream. With hold (a frame follows within a tick) a pre-framed ack is held for the
// writer, which sends it in the same write as the next message (holdAck). It reports
// whether place ran.
func (s *session) placeCommand(place func() *message, hold bool) bool {
	s.kickMu.Lock()
	if s.isKicked() {
		s.kickMu.Unlock()
		return false
	}
	if !s.hasRoom() {
		s.kickMu.Unlock()
		s.tooSlow(s.queueLimit())
		return false
	}
	msg := place()
	if hold && s.holdAck(msg) {
		s.kickMu.Unlock()
		msg.release()
		return true
	}
	// The queue was below its limit and queueReserve covers a concurrent producer, so
	// this fits; and no kick can come between (kick takes kickMu).
	queued := s.push(msg)
	s.kickMu.Unlock()
	msg.release()
	if !queued {
		s.tooSlow(cap(s.send))
	}
	return true
}

func (s *session) tooSlow(queue int) {
	if s.kick(CloseTooSlow, fmt.Sprintf("send queue full (%d messages): the connection does not read fast enough", queue)) {
		s.srv.metrics.slowDrops.Inc()
	}
}

// writeCtx is the context of every write: a cancellable one would cost the library a
// timer per write (4 allocations per recipient per tick). A write is unblocked instead
// by stop closing the connection.
var writeCtx = context.Background()

// stop ends the session now: the reader's context and the connection, which unblocks a
// writer stuck on a peer that does not read.
func (s *session) stop() {
	s.cancel()
	s.conn.CloseNow()
}

// kickGrace is how long a kicked connection's writer has to send the close frame before
// the connection is cut: a writer blocked on a peer that does not read never would.
const kickGrace = time.Second

// kick asks the writer to close the connection with code and reason, and cuts it after
// kickGrace if that did not happen. It never blocks; it reports whether this was the
// first kick.
func (s *session) kick(code websocket.StatusCode, reason string) bool {
	first := false
	s.kickMu.Lock()
	defer s.kickMu.Unlock()
	s.kickOnce.Do(func() {
		first = true
		s.kickCode, s.kickReason = code, reason
		close(s.kicked)
		time.AfterFunc(kickGrace, s.stop)
	})
	return first
}

// sendError queues an Error for the client and counts a strike; past maxStrikes the
// connection is closed with a policy violation.
func (s *session) sendError(code pb.ErrorCode, reason string) {
	s.tell(code, reason)
	n := s.strikes.Add(1)
	if !s.abuse.Allow() {
		s.kick(websocket.StatusPolicyViolation, fmt.Sprintf("%d protocol errors; last: %s", n, reason))
	}
}

// fatal sends an Error and closes the connection with code.
func (s *session) fatal(code pb.ErrorCode, status websocket.StatusCode, reason string) {
	s.tell(code, reason)
	s.kick(status, reason)
}

// tell queues an Error record for the client and counts it.
func (s *session) tell(code pb.ErrorCode, reason string) {
	s.srv.metrics.protocolErrors.Inc()
	b, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: code, Reason: reason}}})
	if err != nil { // a reason that is not UTF-8 (it quoted the client's bytes)
		b, _ = stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: code, Reason: strings.ToValidUTF8(reason, "?")}}})
	}
	s.sendBytes(b)
}

// readClient reads and decodes one client message. A non-nil *pb.ClientMessage with a nil
// error is a valid message; errBadMessage means the client was told and may go on.
func (s *session) readClient() (*pb.ClientMessage, error) {
	// Background, not a cancellable context (which costs the library a timer per read):
	// stop closes the connection to end a blocked read. The buffer is the session's, so
	// a message costs no allocation until it is decoded.
	typ, r, err := s.conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	s.rbuf.Reset()
	if _, err := s.rbuf.ReadFrom(r); err != nil {
		return nil, err
	}
	data := s.rbuf.Bytes()
	if !s.limiter.Allow() {
		s.sendError(pb.ErrorCode_ERROR_CODE_LIMIT, fmt.Sprintf("more than %.0f messages per second; message dropped, slow down", s.srv.opts.MessagesPerSecond))
		return nil, errBadMessage
	}
	if int64(len(data)) > s.srv.opts.MaxMessageBytes {
		s.sendError(pb.ErrorCode_ERROR_CODE_LIMIT, fmt.Sprintf("message of %d bytes is over the relay's limit of %d bytes; send smaller messages", len(data), s.srv.opts.MaxMessageBytes))
		return nil, errBadMessage
	}
	if typ != websocket.MessageBinary {
		s.sendError(pb.ErrorCode_ERROR_CODE_MALFORMED, "text message: send binary messages, each one encoded tickrelay.v1.ClientMessage")
		return nil, errBadMessage
	}
	msg := &pb.ClientMessage{}
	if err := proto.Unmarshal(data, msg); err != nil {
		s.sendError(pb.ErrorCode_ERROR_CODE_MALFORMED, "not a tickrelay.v1.ClientMessage: "+err.Error())
		return nil, errBadMessage
	}
	if msg.GetMsg() == nil {
		s.sendError(pb.ErrorCode_ERROR_CODE_MALFORMED, "the message sets no known field of ClientMessage (empty, or from a newer protocol)")
		return nil, errBadMessage
	}
	return msg, nil
}

var errBadMessage = errors.New("relay: bad client message")

// run serves the connection until it ends: join, then the message loop.
func (s *session) run() {
	go s.writeLoop()
	// Whatever ends the reader ends the writer too, and run returns only when both ended.
	defer func() {
		select {
		case <-s.kicked: // the writer closes with the kick's code (cut after kickGrace)
		default:
			s.stop()
		}
		<-s.writerDone
	}()

	if !s.join() {
		return
	}
	defer s.match.post(event{kind: evGone, s: s})
	if s.dg != nil {
		dgDone := make(chan struct{})
		go s.datagramLoop(dgDone)
		defer func() { s.cancel(); <-dgDone }()
	}
	for {
		msg, err := s.readClient()
		if s.isKicked() {
			// Nothing a kicked connection sends is acted on: its writer is closing it.
			return
		}
		if errors.Is(err, errBadMessage) {
			continue
		}
		if err != nil {
			return
		}
		switch m := msg.GetMsg().(type) {
		case *pb.ClientMessage_Command:
			if s.claims.Role != RolePlayer {
				s.sendError(pb.ErrorCode_ERROR_CODE_FORBIDDEN, "spectators cannot send commands")
				continue
			}
			c := m.Command
			// The player id is always the relay's; a value from the client is ignored.
			s.match.postTicked(event{kind: evCommand, s: s, seq: c.GetSeq(), tick: c.GetTick(), payload: c.GetPayload()})
		case *pb.ClientMessage_Checksum:
			if s.claims.Role != RolePlayer {
				s.sendError(pb.ErrorCode_ERROR_CODE_FORBIDDEN, "spectators do not report checksums")
				continue
			}
			ev := event{kind: evChecksum, s: s, tick: m.Checksum.GetTick(), hash: m.Checksum.GetHash(), over: m.Checksum.GetOver(), seq: m.Checksum.GetWinner()}
			if f := m.Checksum.GetFailed(); f != "" {
				ev.payload = []byte(lockstep.PeerText(f, lockstep.MaxFailureText))
			}
			s.match.postTicked(ev)
		case *pb.ClientMessage_Fetch:
			s.fetchMessage(m.Fetch)
		case *pb.ClientMessage_Ping:
			delay := s.match.opts.InputDelay
			if s.claims.Role == RolePlayer {
				delay = s.delay.observe(int64(m.Ping.GetRttUs()))
				if i := int(s.claims.Slot) - 1; i >= 0 && i < len(s.match.status.delays) {
					s.match.status.delays[i].Store(int32(delay))
				}
			}
			b, _ := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Pong{Pong: &pb.Pong{Nonce: m.Ping.GetNonce(), InputDelay: uint32(delay)}}})
			s.sendBytes(b)
		case *pb.ClientMessage_Evidence:
			if s.claims.Role != RolePlayer {
				s.sendError(pb.ErrorCode_ERROR_CODE_FORBIDDEN, "spectators are not asked for evidence")
				continue
			}
			s.match.post(event{kind: evResult, s: s, data: m.Evidence})
		case *pb.ClientMessage_HealResult:
			if s.claims.Role != RolePlayer {
				s.sendError(pb.ErrorCode_ERROR_CODE_FORBIDDEN, "spectators are not sent states to heal")
				continue
			}
			s.match.post(event{kind: evResult, s: s, data: m.HealResult})
		case *pb.ClientMessage_Pong:
			// The relay sends no pings today; a pong is harmless.
		case *pb.ClientMessage_Join:
			s.sendError(pb.ErrorCode_ERROR_CODE_UNEXPECTED, "this connection already joined; open a new connection to join again")
		case *pb.ClientMessage_Leave:
			s.match.post(event{kind: evLeave, s: s})
			s.kick(websocket.StatusNormalClosure, "left")
			return
		}
	}
}

// join reads the first message, which must be a join with a valid token, and hands the
// session to its match. It reports whether the session joined.
func (s *session) join() bool {
	// A timer, not a read deadline: the library closes a connection whose read context
	// ends, and a kick lets the client see why.
	timeout := time.AfterFunc(s.srv.opts.JoinTimeout, func() {
		if s.kick(CloseJoinTimeout, fmt.Sprintf("no join within %s", s.srv.opts.JoinTimeout)) {
			s.srv.metrics.connRejected.Inc()
		}
	})
	defer timeout.Stop()
	for {
		msg, err := s.readClient()
		if s.isKicked() {
			// Repeated abuse before joining (or the join timeout): the writer closes with
			// the kick's code and reason.
			return false
		}
		if errors.Is(err, errBadMessage) {
			continue
		}
		if err != nil {
			return false
		}
		j := msg.GetJoin()
		if j == nil {
			s.sendError(pb.ErrorCode_ERROR_CODE_UNEXPECTED, "the first message must be join with a token")
			if s.isKicked() {
				return false
			}
			continue
		}
		if v := j.GetStreamVersion(); v < stream.MinVersion {
			s.srv.metrics.connRejected.Inc()
			s.fatal(pb.ErrorCode_ERROR_CODE_UPGRADE, websocket.StatusPolicyViolation, fmt.Sprintf(
				"this relay streams format version %d and serves clients of version %d and later; the client reads version %d (Join.stream_version): upgrade the client", stream.Version, stream.MinVersion, v))
			return false
		}
		claims, err := s.srv.checkToken(j.GetToken(), time.Now())
		if err != nil {
			s.srv.metrics.connRejected.Inc()
			s.fatal(pb.ErrorCode_ERROR_CODE_BAD_TOKEN, websocket.StatusPolicyViolation, err.Error())
			return false
		}
		m := s.srv.lookup(claims.Match)
		if m == nil && s.srv.opts.Cluster != nil {
			if m = s.srv.remoteJoin(s, claims); m == nil {
				return false
			}
		}
		if m == nil {
			s.srv.metrics.connRejected.Inc()
			s.fatal(pb.ErrorCode_ERROR_CODE_NO_MATCH, websocket.StatusNormalClosure, fmt.Sprintf("match %s does not exist on this relay", claims.Match))
			return false
		}
		s.claims, s.match = claims, m
		s.delay = newDelayEstimator(m.opts.TickRate, m.opts.InputDelay, m.opts.MinInputDelay, m.opts.MaxInputDelay, j.GetSendsOnFrame(), j.GetPredicts())
		s.datagramFrames = j.GetDatagramFrames() && s.dg != nil && claims.Role == RolePlayer
		if j.ResumeFrom != nil {
			from := j.GetResumeFrom()
			s.resumeFrom = &from
		}
		if j.ResumeOffset != nil && j.GetStreamVersion() >= stream.CRCVersion {
			// An older client counts only the records it knows: its offset is not the
			// stream's, so it resumes by tick (stream.MinVersion).
			off := j.GetResumeOffset()
			s.resumeOffset = &off
		}
		if !m.post(event{kind: evJoin, s: s}) {
			if claims.Backend {
				s.srv.metrics.connRejected.Inc()
				s.fatal(pb.ErrorCode_ERROR_CODE_NO_MATCH, websocket.StatusNormalClosure, reasonBackendTokenEnded)
				return false
			}
			if m.joinEnded(s) {
				// The writer sends the rest of the stream and closes; wait for it.
				cut := time.AfterFunc(endedServeTimeout, s.stop)
				<-s.writerDone
				cut.Stop()
				return false
			}
			m.refuseJoin(s)
			return false
		}
		return true
	}
}
