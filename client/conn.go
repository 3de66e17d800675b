// The connection: dial and join, the reader that reconnects and resumes, pings.

package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// maxRedirects bounds the redirects one join follows (a cluster needs one).
const maxRedirects = 3

// join connects through the relay the session last joined (if any) or, failing to reach
// it, the URL it was dialled with, following a cluster's redirects to the match's node.
func (s *Session) join(ctx context.Context, resume *uint64) error {
	urls := []string{s.url}
	if s.at != "" && s.at != s.url {
		urls = []string{s.at, s.url}
	}
	var err error
	for _, url := range urls {
		for hop := 0; ; hop++ {
			err = s.connect(ctx, url, resume)
			var rerr *RelayError
			if hop < maxRedirects && errors.As(err, &rerr) && rerr.Code == pb.ErrorCode_ERROR_CODE_REDIRECT && rerr.URL != "" {
				url = rerr.URL
				continue
			}
			break
		}
		if err == nil {
			s.at = url
			return nil
		}
		var rerr *RelayError
		if errors.As(err, &rerr) {
			return err // a relay answered: another URL would say the same
		}
	}
	return err
}

// firstJoin is join for Dial. Like a reconnect, it joins again after a refusal that may
// pass (retryable: a cluster moving the match), backing off from ReconnectMin to
// ReconnectMax for at most ReconnectFor, unless NoReconnect; ctx bounds it all.
func (s *Session) firstJoin(ctx context.Context) error {
	deadline := time.Now().Add(s.opts.ReconnectFor)
	wait := s.opts.ReconnectMin
	for {
		err := s.join(ctx, nil) // from the start: a new session has no sim state to resume
		var rerr *RelayError
		if err == nil || s.opts.NoReconnect || !errors.As(err, &rerr) || !retryable(rerr) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait = min(2*wait, s.opts.ReconnectMax)
	}
}

// retryable reports whether a relay's refusal is one the session joins again after by
// itself (ErrorCodes: Auto): a cluster moving the match, or redirecting (again).
func retryable(e *RelayError) bool { return ErrorCodeOf(e.Code).Auto }

// connect dials url, joins (resuming at resume if set) and handles the relay's records up
// to and including its Welcome and whatever followed it in the same message.
func (s *Session) connect(ctx context.Context, url string, resume *uint64) error {
	conn, dg, err := s.dial(ctx, url)
	if err != nil {
		return err
	}
	conn.SetReadLimit(s.opts.ReadLimit)
	join := &pb.Join{Token: s.token, Client: s.opts.Name, ResumeFrom: resume, StreamVersion: stream.Version, SendsOnFrame: s.opts.SendsOnFrame, Predicts: s.opts.Predict != nil, DatagramFrames: s.opts.DatagramFrames}
	if resume != nil {
		off := uint64(s.streamBytes.Load())
		join.ResumeOffset = &off
	}
	b, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: join}})
	if err == nil {
		err = conn.Write(ctx, websocket.MessageBinary, b)
	}
	if err != nil {
		conn.CloseNow()
		return fmt.Errorf("client: join: %w", err)
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			conn.CloseNow()
			return fmt.Errorf("client: waiting for welcome: %w", err)
		}
		welcome, rest, err := s.beforeWelcome(data)
		if err != nil {
			conn.CloseNow()
			return err
		}
		if welcome == nil {
			continue
		}
		s.connMu.Lock()
		s.conn, s.welcome, s.dg = conn, welcome, dg
		s.dgRTT.Store(false)
		s.dgPings.mu.Lock()
		s.dgPings.at = time.Time{}
		s.dgPings.mu.Unlock()
		s.connMu.Unlock()
		s.blockKnown = false // a resumed stream may start mid-block
		s.delay.Store(welcome.GetInputDelay())
		if last := welcome.GetLastSeq(); s.seq.Load() < last {
			s.seq.Store(last) // a restarted client continues above the relay's last seq
		}
		if len(rest) > 0 {
			s.applyMu.Lock()
			err := s.records(rest)
			s.applyMu.Unlock()
			if err != nil {
				conn.CloseNow()
				return err
			}
		}
		if dg != nil {
			s.dgWG.Add(1)
			go s.datagramLoop(dg)
			if s.opts.DatagramFrames && welcome.GetPlayer() != 0 {
				s.dgWG.Add(1)
				go s.silenceLoop(dg)
			}
		}
		return nil
	}
}

// beforeWelcome looks for the Welcome (or an Error) in a message; rest is what followed.
func (s *Session) beforeWelcome(b []byte) (welcome *pb.Welcome, rest []byte, err error) {
	w := stream.NewWalker(b)
	for w.Next() {
		var msg pb.ServerMessage
		if w.Decode(&msg, nil) == nil {
			switch m := msg.GetMsg().(type) {
			case *pb.ServerMessage_Welcome:
				return m.Welcome, w.Rest(), nil
			case *pb.ServerMessage_Error:
				return nil, nil, &RelayError{Code: m.Error.GetCode(), Reason: m.Error.GetReason(), URL: m.Error.GetRedirectUrl()}
			}
		}
	}
	if err := w.Err(); err != nil {
		return nil, nil, fmt.Errorf("client: the relay sent a bad record: %w", err)
	}
	return nil, nil, nil
}

// Interrupt drops the connection abruptly, as a network failure would, without leaving
// the match. The session reconnects and resumes unless NoReconnect is set. It is how
// tests and chaos drills exercise rejoining.
func (s *Session) Interrupt() {
	s.connMu.Lock()
	c := s.conn
	s.connMu.Unlock()
	c.CloseNow()
}

func (s *Session) write(ctx context.Context, msg *pb.ClientMessage) error {
	b, err := proto.Marshal(msg)
	if err != nil {
		return err
	}
	s.connMu.Lock()
	c := s.conn
	s.connMu.Unlock()
	if err := c.Write(ctx, websocket.MessageBinary, b); err != nil {
		return fmt.Errorf("client: write: %w", err)
	}
	return nil
}

// read reads one message into the session's buffer (valid until the next read). It
// waits on a background context: a cancellable one would cost the websocket library a
// timer per message; Close ends a blocked read by closing the connection.
func (s *Session) read(c *websocket.Conn) ([]byte, error) {
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	s.rbuf.Reset()
	if _, err := s.rbuf.ReadFrom(r); err != nil {
		return nil, err
	}
	return s.rbuf.Bytes(), nil
}

func (s *Session) readLoop() {
	defer close(s.done)
	defer s.dgWG.Wait() // the connection is closed: its datagram reader ends
	defer s.cancel()
	for {
		s.connMu.Lock()
		c := s.conn
		s.connMu.Unlock()
		data, err := s.read(c)
		if err == nil {
			s.applyMu.Lock()
			err = s.records(data)
			s.applyMu.Unlock()
			if err == nil {
				continue
			}
			if !errors.Is(err, lockstep.ErrGap) {
				s.err = err
				c.Close(websocket.StatusPolicyViolation, "bad stream")
				return
			}
			// A missing frame: the relay dropped this connection mid-stream (too slow).
			// Resuming from the next tick needed repairs it.
		}
		c.CloseNow()
		if s.end != nil || s.closing.Load() || s.ctx.Err() != nil {
			if s.end == nil {
				s.err = fmt.Errorf("client: connection closed: %w", err)
			}
			return
		}
		if s.opts.NoReconnect {
			s.err = fmt.Errorf("client: connection lost: %w", err)
			return
		}
		if code := websocket.CloseStatus(err); !reconnectable(code) {
			s.err = fmt.Errorf("client: the relay closed the connection with %s: %w", pb.CloseCode(code), err)
			return
		}
		if rerr := s.reconnect(); rerr != nil {
			s.err = fmt.Errorf("client: connection lost (%v) and reconnecting failed: %w", err, rerr)
			return
		}
		if s.closing.Load() || s.ctx.Err() != nil {
			// Close ran during the reconnect, on the connection before it (it sets
			// closing before it looks at the connection): this one is for nobody.
			s.connMu.Lock()
			c := s.conn
			s.connMu.Unlock()
			c.CloseNow()
			s.err = errors.New("client: connection closed")
			return
		}
	}
}

// reconnectable says whether a connection closed with code (-1: no close frame) is worth
// resuming (CloseCodes: Reconnect): after a drop, too slow a read, the relay going away or
// a passing failure on its side. After any other code (replaced by a newer connection
// with the same token, abuse, a bad token, the match over) a reconnect would be refused
// again or would take the slot back from the connection that replaced this one.
func reconnectable(code websocket.StatusCode) bool { return CloseCodeOf(code).Reconnect }

// reconnect redials with a doubling backoff and resumes at the next tick to apply. A
// relay that refuses the join (bad token, no such match) ends the attempts at once,
// unless it is a cluster moving the match (retryable).
func (s *Session) reconnect() error {
	if mark := s.sealed.Load(); s.outageSince.IsZero() || mark != s.outageMark {
		s.outageSince, s.outageMark = time.Now(), mark
	} // else no tick came since the last reconnect: the same outage goes on
	deadline := s.outageSince.Add(s.opts.ReconnectFor)
	wait := s.opts.ReconnectMin
	for attempt := 1; ; attempt++ {
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("client: no new tick for %s of reconnecting (ReconnectFor)", s.opts.ReconnectFor)
		}
		var resume *uint64
		if s.peer != nil {
			next := s.peer.Next()
			resume = &next
		}
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		err := s.join(ctx, resume)
		cancel()
		if err == nil {
			s.reconnects.Add(1)
			s.rttUs.Store(0) // the old connection's (maybe another node's): not this one's
			select {
			case s.rejoined <- struct{}{}:
			default:
			}
			if s.opts.OnReconnect != nil {
				s.opts.OnReconnect(s, attempt)
			}
			return nil
		}
		// A relay at its cap may still count this session's dropped connection: FULL
		// passes too.
		var rerr *RelayError
		if (errors.As(err, &rerr) && !retryable(rerr) && rerr.Code != pb.ErrorCode_ERROR_CODE_FULL) || time.Now().After(deadline) {
			return err
		}
		wait = min(2*wait, s.opts.ReconnectMax)
	}
}

// startPings: after each join the next pings go at a quarter of PingInterval. A ping
// reports the round trip of the one before it, and the relay's input delay keeps a start
// margin until it has a few round trips of the new connection: this way it has four
// within about a second and a quarter, not five seconds.
const startPings = 4

func (s *Session) pingLoop() {
	every := s.opts.PingInterval
	fast := startPings
	t := time.NewTimer(every / 4)
	defer t.Stop()
	for {
		select {
		case <-s.rejoined:
			fast = startPings
			t.Reset(every / 4)
		case <-t.C:
			s.pingMu.Lock()
			s.nonce++
			n := s.nonce
			s.pings[n] = time.Now()
			if len(s.pings) > 16 { // unanswered pings: forget the oldest
				delete(s.pings, n-16)
			}
			s.pingMu.Unlock()
			_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: n, RttUs: s.rttUs.Load()}}})
			s.pingDatagram(n)
			next := every
			if fast > 0 {
				fast--
				next = every / 4
			}
			t.Reset(next)
		case <-s.done:
			return
		}
	}
}
