package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
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
	// block for long (frames wait behind them). Send may be called from them; Close may
	// not (it waits for that goroutine): call it from another goroutine (go s.Close()).
	//
	// OnStart: the match started (or, joining late, its Start arrived).
	OnStart func(s *Session, start *pb.Start)
	// OnTick: a sealed tick was applied to the sim. f is valid only during the call.
	OnTick func(s *Session, f lockstep.Frame)
	// OnAck: the relay placed (or rejected) one of this player's commands.
	OnAck func(s *Session, ack *pb.CommandAck)
	// OnDesync: the relay found players disagreeing on a tick's state.
	OnDesync func(s *Session, d *pb.Desync)
	// OnDesyncReport: the relay's forensics of a desync (after its OnDesync): the first
	// tick the players' states differ, the subsystems and the dump lines that differ
	// (docs/forensics.md). The session answers the relay's probes for it by itself.
	OnDesyncReport func(s *Session, r *pb.DesyncReport)
	// Predict turns prediction on for a player (PredictOptions): render from Head.
	Predict *PredictOptions
	// OnHealed: this player's sim was on the wrong side of a desync and the relay sent
	// the right state: err is nil when the session restored it (the sim jumped: its
	// state after tick `through` is the right game's), or says why it refused it
	// (wrapping lockstep.ErrHealRefused: the sim is as it was). The session heals by
	// itself; the callback is for a game that redraws (docs/forensics.md, "Healing").
	OnHealed func(s *Session, through uint64, err error)
	// OnSimFailed: the sim failed while stepping a tick (a module that ran out of fuel or
	// trapped; err wraps lockstep.ErrSimFailed and names the tick). The session does not
	// stop: it follows the stream and reports the failure with its checksums, so that the
	// relay judges it like the other players' (End.REASON_SIM_FAILED when all fail alike).
	OnSimFailed func(s *Session, err error)
	// OnError: the relay reported a problem with something this client sent.
	OnError func(s *Session, e *pb.Error)
	// OnStream receives every stream record (start, frame, idle, checkpoint, desync,
	// event, end) as its encoded bytes — for a spectator, exactly the replay file's
	// records; write replay.Magic and the format version first to save a replay. The
	// bytes are valid only during the call.
	OnStream func(s *Session, record []byte)
	// PingInterval; 0 means DefaultPingInterval, negative means never. The first five
	// pings after each join go at a quarter of it, so that the relay's input delay soon
	// has the new connection's round trips.
	PingInterval time.Duration
	// ReadLimit in bytes; 0 means DefaultReadLimit.
	ReadLimit int64
	// Name is sent to the relay for its logs.
	Name string
	// SendsOnFrame tells the relay (Join.sends_on_frame) that this client sends its
	// commands from OnTick, right after a frame: it is then suggested one tick less input
	// delay, down to 0 on a round trip that fits in a tick.
	SendsOnFrame bool
	// NoReconnect turns automatic reconnection off. By default a session whose
	// connection drops redials with a doubling backoff between ReconnectMin and
	// ReconnectMax, for at most ReconnectFor, and resumes the stream where it stopped;
	// the match never waits for it. Reconnects that bring no new tick (a relay that drops
	// each one at once) count as one outage, which ReconnectFor bounds.
	NoReconnect                              bool
	ReconnectMin, ReconnectMax, ReconnectFor time.Duration
	// OnReconnect is called (on the reader goroutine) after a successful reconnect.
	OnReconnect func(s *Session, attempt int)
	// HTTPClient dials the WebSocket (e.g. with a TLS config for wss:// with a private
	// CA); nil means a client like http.DefaultClient whose sockets are tuned for a
	// lockstep stream on a lossy link: a lower retransmission floor, quicker
	// acknowledgements, no doubling of the first timeouts, where the kernel allows
	// (docs/operations.md, "TCP on lossy links"). Not used in a browser.
	HTTPClient *http.Client
	// KernelTCP, with no HTTPClient, leaves the dialled socket's timers as the kernel
	// has them.
	KernelTCP bool
	// Transport picks the connection (transport.go): TransportAuto (the zero value) uses
	// WebTransport when WebTransport is set and falls back to WebSocket when it does not
	// connect within WebTransportTimeout; the others force one.
	Transport Transport
	// WebTransport is the relay's WebTransport endpoint for the match (the match API's
	// "webtransport"); nil: WebSocket only.
	WebTransport *WebTransportEndpoint
	// DatagramFrames, on WebTransport, takes a player's live frames from the relay's
	// frames datagrams alone (Join.datagram_frames): the relay leaves them off the
	// stream (fewer packets; docs/performance.md measured 28 % fewer and 10-20 % less of
	// the relay's CPU), and the session fetches on the stream what the datagrams miss.
	DatagramFrames bool
	// WebTransportTimeout bounds TransportAuto's attempt before it falls back (UDP
	// blocked); default DefaultWebTransportTimeout.
	WebTransportTimeout time.Duration
	// ListenUDP, if set, opens the UDP socket a WebTransport session is dialled from
	// (one in a network namespace, say); nil: the system's.
	ListenUDP func() (net.PacketConn, error)
}

// Session is one connection to a relay: a player (Send commands; checksums are reported
// automatically) or a spectator (the stream only). It runs its own reader goroutine,
// which applies every sealed frame to the sim through a lockstep.Peer.
type Session struct {
	url, token string
	opts       Options
	ctx        context.Context
	cancel     context.CancelFunc

	// at is the URL of the relay this session last joined through: in a relay cluster,
	// the node running the match, where a redirect from url led (reader goroutine only).
	at string

	// transport is the Transport of the connection now (or last) joined; wtFailed: auto
	// fell back once, and later connections go straight to WebSocket (transport.go).
	transport atomic.Int32
	wtFailed  bool

	// applyMu is held while records or a frames datagram are applied: the reader and
	// the datagram reader (datagram.go) take turns, so callbacks never run at once.
	applyMu sync.Mutex
	dgWG    sync.WaitGroup // the datagram readers still running
	dgOff   atomic.Bool    // a datagram's frame failed to apply: the stream alone goes on
	// dgramsIn, dgramFrames, dgramsBad: DatagramStats.
	dgramsIn, dgramFrames, dgramsBad atomic.Int64
	unacked                          unacked // commands resent as datagrams until acked
	// fetching is the Fetch a session taking frames as datagrams sent last (fetch.go);
	// fetches counts them; appliedAt is when a tick was last applied (Unix nanoseconds).
	fetching  fetching
	fetches   atomic.Int64
	appliedAt atomic.Int64
	// dgPings is the latest ping datagram (datagram.go); dgRTT: the connection's round
	// trip is timed by datagrams, and the stream's pongs leave it alone.
	dgPings dgPings
	dgRTT   atomic.Bool

	connMu     sync.Mutex
	conn       *websocket.Conn
	dg         datagrams // the connection's datagrams on WebTransport, else nil
	welcome    *pb.Welcome
	closing    atomic.Bool
	reconnects atomic.Int32
	// The time between two live ticks applied: the last one's (the reader's own), and the
	// longest yet, in nanoseconds — what a player felt of a stall or a reconnect.
	lastLive   time.Time
	longestGap atomic.Int64

	seq      atomic.Uint32
	sealed   atomic.Int64 // last applied tick, -1 before any
	delay    atomic.Uint32
	rttUs    atomic.Uint32
	commands atomic.Int64
	// streamBytes counts the stream records received (from Start on): for a spectator,
	// its position in the replay file's body, where a reconnect resumes.
	streamBytes atomic.Int64

	pingMu   sync.Mutex
	pings    map[uint64]time.Time
	rejoined chan struct{} // a reconnect joined: the ping loop starts fast again
	nonce    uint64

	started chan struct{}
	done    chan struct{}

	// Owned by the reader goroutine until done is closed.
	// outageSince is when the connection dropped, with no tick applied since (outageMark,
	// the last tick applied then): reconnects that bring no new tick are one outage, which
	// ReconnectFor bounds.
	outageSince time.Time
	outageMark  int64
	rbuf        bytes.Buffer
	unpack      stream.Unpacker
	start       *pb.Start
	sim         sim.Sim
	// simErr is the sim's failure (lockstep.ErrSimFailed), if it failed: the session
	// follows the stream on and reports it with every checkpoint (Checksum.failed).
	simErr atomic.Pointer[error]
	peer   *lockstep.Peer
	// hist keeps a player's recent states and frames, to answer desync probes.
	hist *lockstep.History
	// head is the predicted present, with Options.Predict (predict.go); headStats its
	// figures once it stopped.
	headMu    sync.Mutex
	head      *lockstep.Head
	headStats lockstep.HeadStats
	frame     lockstep.Frame
	end       *pb.End
	err       error

	// A spectator's stream is the replay file's bytes: each block is checked against its
	// crc record, from the first block the connection received whole (block is known).
	block      stream.Block
	blockKnown bool
}

// RelayError is an Error the relay sent, as a Go error.
type RelayError struct {
	Code   pb.ErrorCode
	Reason string
	// URL is where to join instead, with ERROR_CODE_REDIRECT (a relay cluster).
	URL string
}

func (e *RelayError) Error() string { return fmt.Sprintf("relay: %s: %s", e.Code, e.Reason) }

// ErrEnded is returned by Send after the match ended.
var ErrEnded = errors.New("client: the match has ended")

// ErrPayloadTooLarge is returned by Send for a payload over the limit the relay
// announced (Welcome.limits.max_payload): the command is not sent and takes no seq.
var ErrPayloadTooLarge = errors.New("client: the payload is over the relay's limit")

// Dial connects to the relay at url (ws:// or wss://, the /v1/ws endpoint), joins with
// token and returns once the relay welcomed the connection (and the records that came
// with the welcome are applied; ctx bounds that too). In a relay cluster url may be
// any node: the session follows the redirect to the node that runs the match, and
// reconnects there (or, if that node is gone, through url again); while the cluster moves
// the match (RETRY) it joins again with the reconnect backoff, unless NoReconnect. The
// session lives until the match ends, the connection drops, or Close.
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
		pings: map[uint64]time.Time{}, rejoined: make(chan struct{}, 1), started: make(chan struct{}), done: make(chan struct{}),
	}
	s.sealed.Store(-1)
	// The records that came with the welcome are applied before Dial returns: a long
	// idle run among them stops when ctx ends, as one after Dial stops at Close.
	stop := context.AfterFunc(ctx, cancel)
	err := s.firstJoin(ctx)
	if !stop() && (err == nil || errors.Is(err, context.Canceled)) {
		if err == nil {
			s.conn.CloseNow()
		}
		err = fmt.Errorf("client: dial: %w", ctx.Err()) // the caller's reason, not the session's cancel
	}
	if err != nil {
		cancel()
		return nil, err
	}
	go s.readLoop()
	if o.PingInterval > 0 {
		go s.pingLoop()
	}
	return s, nil
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

// Limits returns the limits the relay announced in its latest Welcome (nil from a relay
// that announces none): SendAt refuses a payload over max_payload before sending it.
func (s *Session) Limits() *pb.Limits { return s.Welcome().GetLimits() }

// Reconnects returns how many times the session reconnected.
func (s *Session) Reconnects() int { return int(s.reconnects.Load()) }

// LongestGap returns the longest time between two live ticks the session applied (the
// catch-up after a join or a resume not counted as ticks, the time it took counted in the
// gap): a stall or a reconnect as the game felt it. Zero before two live ticks.
func (s *Session) LongestGap() time.Duration { return time.Duration(s.longestGap.Load()) }

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

// SimErr returns the sim's failure (wrapping lockstep.ErrSimFailed), or nil while it runs.
func (s *Session) SimErr() error {
	if p := s.simErr.Load(); p != nil {
		return *p
	}
	return nil
}

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
	if max := s.Limits().GetMaxPayload(); max > 0 && len(payload) > int(max) {
		return 0, fmt.Errorf("%w: %d bytes, the relay takes at most %d (Welcome.limits.max_payload); not sent: split it or send less", ErrPayloadTooLarge, len(payload), max)
	}
	seq := s.seq.Add(1)
	s.commands.Add(1)
	cmd := &pb.Command{Seq: seq, Tick: target, Payload: payload}
	s.sendDatagram(cmd)
	if err := s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: cmd}}); err != nil {
		return seq, err
	}
	s.headOwn(seq, target, payload)
	return seq, nil
}

// Close leaves the match and closes the connection, and waits for the session's reader
// to stop: not from a callback (see Options). It waits at most about a second for a
// relay that does not take what the client writes.
func (s *Session) Close() error {
	s.closing.Store(true)
	ctx, cancel := context.WithTimeout(s.ctx, leaveTimeout)
	left := s.write(ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Leave{Leave: &pb.Leave{Reason: "client closed"}}})
	cancel()
	s.connMu.Lock()
	c := s.conn
	s.connMu.Unlock()
	var err error
	if left == nil {
		err = c.Close(websocket.StatusNormalClosure, "bye")
		s.cancel()
	} else {
		// The relay did not take the Leave (the connection is gone, or the relay stopped
		// reading): no close handshake to wait for either.
		s.cancel()
		err = c.CloseNow()
	}
	<-s.done
	return err
}

// leaveTimeout bounds Close's Leave write.
const leaveTimeout = time.Second
