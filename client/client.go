package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// Defaults, documented where they are defined.
const (
	// DefaultPingInterval: a session pings the relay every second to measure RTT.
	DefaultPingInterval = time.Second
	// DefaultReadLimit: the largest relay message accepted, 64 MiB (catch-up chunks are
	// at most 32 KiB; the margin is for future relays).
	DefaultReadLimit = 64 << 20
	// DefaultReconnectMin and DefaultReconnectMax bound the reconnect backoff (doubling
	// from 100 ms to 5 s); DefaultReconnectFor is how long a session keeps trying: 60 s,
	// the relay's default rejoin grace.
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 5 * time.Second
	DefaultReconnectFor = 60 * time.Second
)

// Options configure a Session. The zero value works: the sim comes from the registry,
// no callbacks.
type Options struct {
	// NewSim builds the simulation from the Start record. Nil means replay.NewSimFor: the
	// registered sim at the recorded version, with the config hash checked.
	NewSim func(*pb.Start) (sim.Sim, error)
	// Callbacks run on the session's reader goroutine, in stream order; they must not
	// block for long (frames wait behind them). Send may be called from them.
	//
	// OnStart: the match started (or, joining late, its Start arrived).
	OnStart func(s *Session, start *pb.Start)
	// OnTick: a sealed tick was applied to the sim. f is valid only during the call.
	OnTick func(s *Session, f lockstep.Frame)
	// OnAck: the relay placed (or rejected) one of this player's commands.
	OnAck func(s *Session, ack *pb.CommandAck)
	// OnDesync: the relay found players disagreeing on a tick's state.
	OnDesync func(s *Session, d *pb.Desync)
	// OnError: the relay reported a problem with something this client sent.
	OnError func(s *Session, e *pb.Error)
	// OnStream receives every stream record (start, frame, idle, checkpoint, desync,
	// event, end) as its encoded bytes — for a spectator, exactly the replay file's
	// records; write replay.Magic and the format version first to save a replay. The
	// bytes are valid only during the call.
	OnStream func(s *Session, record []byte)
	// PingInterval; 0 means DefaultPingInterval, negative means never.
	PingInterval time.Duration
	// ReadLimit in bytes; 0 means DefaultReadLimit.
	ReadLimit int64
	// Name is sent to the relay for its logs.
	Name string
	// ResumeFrom asks the relay to resume the stream at this tick (after a drop).
	ResumeFrom *uint64
	// NoReconnect turns automatic reconnection off. By default a session whose
	// connection drops redials with a doubling backoff between ReconnectMin and
	// ReconnectMax, for at most ReconnectFor, and resumes the stream where it stopped;
	// the match never waits for it.
	NoReconnect                              bool
	ReconnectMin, ReconnectMax, ReconnectFor time.Duration
	// OnReconnect is called (on the reader goroutine) after a successful reconnect.
	OnReconnect func(s *Session, attempt int)
	// HTTPClient dials the WebSocket (e.g. with a TLS config for wss:// with a private
	// CA); nil means http.DefaultClient. Not used in a browser.
	HTTPClient *http.Client
}

// Session is one connection to a relay: a player (Send commands; checksums are reported
// automatically) or a spectator (the stream only). It runs its own reader goroutine,
// which applies every sealed frame to the sim through a lockstep.Peer.
type Session struct {
	url, token string
	opts       Options
	ctx        context.Context
	cancel     context.CancelFunc

	connMu     sync.Mutex
	conn       *websocket.Conn
	welcome    *pb.Welcome
	closing    atomic.Bool
	reconnects atomic.Int32

	seq      atomic.Uint32
	sealed   atomic.Int64 // last applied tick, -1 before any
	delay    atomic.Uint32
	rttUs    atomic.Uint32
	commands atomic.Int64
	// streamBytes counts the stream records received (from Start on): for a spectator,
	// its position in the replay file's body, where a reconnect resumes.
	streamBytes atomic.Int64

	pingMu sync.Mutex
	pings  map[uint64]time.Time
	nonce  uint64

	started chan struct{}
	done    chan struct{}

	// Owned by the reader goroutine until done is closed.
	start *pb.Start
	sim   sim.Sim
	peer  *lockstep.Peer
	frame lockstep.Frame
	end   *pb.End
	err   error
}

// RelayError is an Error the relay sent, as a Go error.
type RelayError struct {
	Code   pb.ErrorCode
	Reason string
}

func (e *RelayError) Error() string { return fmt.Sprintf("relay: %s: %s", e.Code, e.Reason) }

// ErrEnded is returned by Send after the match ended.
var ErrEnded = errors.New("client: the match has ended")

// Dial connects to the relay at url (ws:// or wss://, the /v1/ws endpoint), joins with
// token and returns once the relay welcomed the connection. The session lives until the
// match ends, the connection drops, or Close.
func Dial(ctx context.Context, url, token string, opts *Options) (*Session, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.NewSim == nil {
		o.NewSim = replay.NewSimFor
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.ReadLimit == 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = DefaultReconnectMin
	}
	if o.ReconnectMax <= 0 {
		o.ReconnectMax = DefaultReconnectMax
	}
	if o.ReconnectFor <= 0 {
		o.ReconnectFor = DefaultReconnectFor
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		url: url, token: token, opts: o, ctx: sctx, cancel: cancel,
		pings: map[uint64]time.Time{}, started: make(chan struct{}), done: make(chan struct{}),
	}
	s.sealed.Store(-1)
	if err := s.connect(ctx, o.ResumeFrom); err != nil {
		cancel()
		return nil, err
	}
	go s.readLoop()
	if o.PingInterval > 0 {
		go s.pingLoop()
	}
	return s, nil
}

// connect dials, joins (resuming at resume if set) and handles the relay's records up to
// and including its Welcome and whatever followed it in the same message.
func (s *Session) connect(ctx context.Context, resume *uint64) error {
	conn, _, err := websocket.Dial(ctx, s.url, dialOptions(&s.opts))
	if err != nil {
		return fmt.Errorf("client: dial %s: %w", s.url, err)
	}
	conn.SetReadLimit(s.opts.ReadLimit)
	join := &pb.Join{Token: s.token, Client: s.opts.Name, ResumeFrom: resume}
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
		s.conn, s.welcome = conn, welcome
		s.connMu.Unlock()
		s.delay.Store(welcome.GetInputDelay())
		if last := welcome.GetLastSeq(); s.seq.Load() < last {
			s.seq.Store(last) // a restarted client continues above the relay's last seq
		}
		if len(rest) > 0 {
			if err := s.records(rest); err != nil {
				conn.CloseNow()
				return err
			}
		}
		return nil
	}
}

// beforeWelcome looks for the Welcome (or an Error) in a message; rest is what followed.
func (s *Session) beforeWelcome(b []byte) (welcome *pb.Welcome, rest []byte, err error) {
	for len(b) > 0 {
		n, err := replay.SplitRecord(b)
		if err != nil {
			return nil, nil, fmt.Errorf("client: the relay sent a bad record: %w", err)
		}
		var msg pb.ServerMessage
		if replay.DecodeRecord(b[:n], &msg) == nil {
			switch m := msg.GetMsg().(type) {
			case *pb.ServerMessage_Welcome:
				return m.Welcome, b[n:], nil
			case *pb.ServerMessage_Error:
				return nil, nil, &RelayError{Code: m.Error.GetCode(), Reason: m.Error.GetReason()}
			}
		}
		b = b[n:]
	}
	return nil, nil, nil
}

// Welcome returns the relay's latest welcome: the player id (0 for a spectator), the
// initial input delay, the last sealed tick when joining a running match.
func (s *Session) Welcome() *pb.Welcome {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.welcome
}

// Player returns this connection's player id; 0 for a spectator.
func (s *Session) Player() uint32 { return s.Welcome().GetPlayer() }

// Reconnects returns how many times the session reconnected.
func (s *Session) Reconnects() int { return int(s.reconnects.Load()) }

// Interrupt drops the connection abruptly, as a network failure would, without leaving
// the match. The session reconnects and resumes unless NoReconnect is set. It is how
// tests and chaos drills exercise rejoining.
func (s *Session) Interrupt() {
	s.connMu.Lock()
	c := s.conn
	s.connMu.Unlock()
	c.CloseNow()
}

// WaitStart blocks until the match starts and returns its Start record.
func (s *Session) WaitStart(ctx context.Context) (*pb.Start, error) {
	select {
	case <-s.started:
		return s.start, nil
	case <-s.done:
		if s.start != nil {
			return s.start, nil
		}
		return nil, s.doneErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Wait blocks until the session ends and returns the End record, or the error that ended
// the connection.
func (s *Session) Wait(ctx context.Context) (*pb.End, error) {
	select {
	case <-s.done:
		return s.end, s.doneErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

func (s *Session) doneErr() error {
	if s.end != nil {
		return nil
	}
	return s.err
}

// Sim returns the session's simulation. Read it only from callbacks, or after Done.
func (s *Session) Sim() sim.Sim { return s.sim }

// LastTick returns the last tick applied; ok is false before the first.
func (s *Session) LastTick() (tick uint64, ok bool) {
	t := s.sealed.Load()
	return uint64(t), t >= 0
}

// Live reports whether the session has caught up with the match: the ticks it applies now
// are being sealed as it receives them, not replayed from before it joined.
func (s *Session) Live() bool {
	t := s.sealed.Load()
	if st := s.Welcome().SealedTick; st != nil {
		return t >= int64(*st)
	}
	return true
}

// InputDelay returns the relay's current suggested input delay in ticks.
func (s *Session) InputDelay() uint32 { return s.delay.Load() }

// RTT returns the latest measured round-trip time.
func (s *Session) RTT() time.Duration { return time.Duration(s.rttUs.Load()) * time.Microsecond }

// Send sends a command targeting the last sealed tick + 1 + the suggested input delay and
// returns its seq. Its ack (OnAck) says which tick it got.
func (s *Session) Send(payload []byte) (seq uint32, target uint64, err error) {
	target = uint64(s.sealed.Load()+1) + uint64(s.delay.Load())
	seq, err = s.SendAt(target, payload)
	return seq, target, err
}

// SendAt sends a command targeting tick target.
func (s *Session) SendAt(target uint64, payload []byte) (uint32, error) {
	select {
	case <-s.done:
		return 0, ErrEnded
	default:
	}
	seq := s.seq.Add(1)
	s.commands.Add(1)
	cmd := &pb.Command{Seq: seq, Tick: target, Payload: payload}
	return seq, s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: cmd}})
}

// Close leaves the match and closes the connection.
func (s *Session) Close() error {
	s.closing.Store(true)
	_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{Reason: "client closed"}}})
	s.connMu.Lock()
	c := s.conn
	s.connMu.Unlock()
	err := c.Close(websocket.StatusNormalClosure, "bye")
	s.cancel()
	<-s.done
	return err
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

func (s *Session) readLoop() {
	defer close(s.done)
	defer s.cancel()
	for {
		s.connMu.Lock()
		c := s.conn
		s.connMu.Unlock()
		_, data, err := c.Read(s.ctx)
		if err == nil {
			if err = s.records(data); err == nil {
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
		if rerr := s.reconnect(); rerr != nil {
			s.err = fmt.Errorf("client: connection lost (%v) and reconnecting failed: %w", err, rerr)
			return
		}
	}
}

// reconnect redials with a doubling backoff and resumes at the next tick to apply. A
// relay that refuses the join (bad token, no such match) ends the attempts at once.
func (s *Session) reconnect() error {
	deadline := time.Now().Add(s.opts.ReconnectFor)
	wait := s.opts.ReconnectMin
	for attempt := 1; ; attempt++ {
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
		var resume *uint64
		if s.peer != nil {
			next := s.peer.Next()
			resume = &next
		}
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		err := s.connect(ctx, resume)
		cancel()
		if err == nil {
			s.reconnects.Add(1)
			if s.opts.OnReconnect != nil {
				s.opts.OnReconnect(s, attempt)
			}
			return nil
		}
		var rerr *RelayError
		if errors.As(err, &rerr) || time.Now().After(deadline) {
			return err
		}
		wait = min(2*wait, s.opts.ReconnectMax)
	}
}

func (s *Session) pingLoop() {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
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
		case <-s.done:
			return
		}
	}
}

// records handles every record of one relay message.
func (s *Session) records(b []byte) error {
	for len(b) > 0 {
		n, err := replay.SplitRecord(b)
		if err != nil {
			return fmt.Errorf("client: the relay sent a bad record: %w", err)
		}
		rec := b[:n]
		b = b[n:]
		var msg pb.ServerMessage
		if err := replay.DecodeRecord(rec, &msg); err != nil {
			continue // a record from a newer relay: skip it
		}
		if err := s.handle(&msg, rec); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) handle(msg *pb.ServerMessage, rec []byte) error {
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Frame, *pb.ServerMessage_Idle, *pb.ServerMessage_Start,
		*pb.ServerMessage_Checkpoint, *pb.ServerMessage_Desync, *pb.ServerMessage_Event, *pb.ServerMessage_End:
		s.streamBytes.Add(int64(len(rec)))
		if s.opts.OnStream != nil {
			s.opts.OnStream(s, rec)
		}
	case *pb.ServerMessage_CommandAck:
		if s.opts.OnAck != nil {
			s.opts.OnAck(s, m.CommandAck)
		}
		return nil
	case *pb.ServerMessage_Pong:
		s.pingMu.Lock()
		sent, ok := s.pings[m.Pong.GetNonce()]
		delete(s.pings, m.Pong.GetNonce())
		s.pingMu.Unlock()
		if ok {
			s.rttUs.Store(uint32(min(time.Since(sent).Microseconds(), 1<<31)))
		}
		if d := m.Pong.GetInputDelay(); d > 0 {
			s.delay.Store(d)
		}
		return nil
	case *pb.ServerMessage_Ping:
		return s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Pong{Pong: &pb.Pong{Nonce: m.Ping.GetNonce()}}})
	case *pb.ServerMessage_Error:
		if s.opts.OnError != nil {
			s.opts.OnError(s, m.Error)
		}
		return nil
	}
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Start:
		if s.start != nil {
			return nil
		}
		sm, err := s.opts.NewSim(m.Start)
		if err != nil {
			return fmt.Errorf("client: cannot run this match: %w", err)
		}
		s.start, s.sim = m.Start, sm
		s.peer = lockstep.NewPeer(sm, lockstep.PeerOptions{Every: uint64(m.Start.GetChecksumEvery())})
		close(s.started)
		if s.opts.OnStart != nil {
			s.opts.OnStart(s, m.Start)
		}
	case *pb.ServerMessage_Frame:
		return s.applyFrame(m.Frame)
	case *pb.ServerMessage_Idle:
		if s.peer == nil {
			return fmt.Errorf("client: idle record before start")
		}
		for t := s.peer.Next(); t <= m.Idle.GetThroughTick(); t++ {
			if err := s.apply(lockstep.Frame{Tick: t}); err != nil {
				return err
			}
		}
	case *pb.ServerMessage_Desync:
		if s.opts.OnDesync != nil {
			s.opts.OnDesync(s, m.Desync)
		}
	case *pb.ServerMessage_End:
		s.end = m.End
	}
	return nil
}

func (s *Session) applyFrame(f *pb.Frame) error {
	if s.peer == nil {
		return fmt.Errorf("client: frame before start")
	}
	if f.GetTick() < s.peer.Next() {
		return nil // already applied (a resumed stream repeats what we have)
	}
	s.frame.Tick = f.GetTick()
	s.frame.Commands = s.frame.Commands[:0]
	for _, c := range f.GetCommands() {
		s.frame.Commands = append(s.frame.Commands, sim.Command{Player: c.GetPlayer(), Seq: c.GetSeq(), Payload: c.GetPayload()})
	}
	return s.apply(s.frame)
}

// stale reports whether a checkpoint is too old to be judged any more: catching up on a
// long match, the session would otherwise send a burst of reports the relay has no use
// for (and its rate limit would count against the connection).
func (s *Session) stale(tick uint64) bool {
	st := s.Welcome().SealedTick
	every := uint64(max(s.start.GetChecksumEvery(), 1))
	return st != nil && tick+4*every < *st
}

// apply steps the sim through the peer, reports the checksum on the cadence (players
// only), and calls OnTick.
func (s *Session) apply(f lockstep.Frame) error {
	c, report, err := s.peer.Apply(f)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	s.sealed.Store(int64(f.Tick))
	if report && s.Player() != 0 && !s.stale(c.Tick) {
		over := false
		if e, ok := s.sim.(sim.Ender); ok {
			over, _ = e.Outcome()
		}
		cs := &pb.Checksum{Tick: c.Tick, Hash: c.Hash, Over: over}
		// A failed write means the connection is going; the next read says so and the
		// session reconnects.
		_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: cs}})
	}
	if s.opts.OnTick != nil {
		s.opts.OnTick(s, f)
	}
	return nil
}
