package relay

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/internal/auth"
	"github.com/tickrelay/tickrelay/relay/internal/clock"
	"github.com/tickrelay/tickrelay/relay/internal/hooks"
	"github.com/tickrelay/tickrelay/relay/internal/wsconn"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/web"
)

// keepEnded is how many ended matches the registry keeps for the API.
const keepEnded = 256

// Server is a tickrelay relay: a registry of matches, each run by its own actor, and the
// WebSocket endpoint players and spectators join through. Create one with New, serve
// Handler (and AdminHandler) over HTTP, and call Shutdown to end every match cleanly.
type Server struct {
	opts    Options
	log     *zap.Logger
	tokens  *Tokens
	metrics *metrics

	mu       sync.Mutex
	matches  map[uuid.UUID]*match
	mirrors  map[uuid.UUID]*match // in a cluster: matches of other nodes watched here
	ended    []uuid.UUID
	sessions map[*session]struct{}
	perAddr  map[string]int // live connections per remote IP

	generatedSecret bool

	closing atomic.Bool
	// wt is the WebTransport endpoint Listen opened, nil without one: the match API
	// hands out its URL and certificate hashes (webtransport.go).
	wt       atomic.Pointer[webTransportEndpoint]
	matchWG  sync.WaitGroup
	connWG   sync.WaitGroup
	connsNow atomic.Int64
	clock    clockWatch
	phases   *clock.Phases
	arbiters chan struct{}  // the arbiter's workers (arbiter.go)
	jwt      *auth.Verifier // the backend's join tokens (backend.go); nil: none
	hooks    *hooks.Outbox  // the backend's webhooks (backend.go); nil: none
}

// New returns a Server. A nil logger logs nothing.
func New(opts Options, log *zap.Logger) (*Server, error) {
	opts = opts.withDefaults()
	if log == nil {
		log = zap.NewNop()
	}
	secret := opts.TokenSecret
	if len(secret) == 0 {
		var err error
		if secret, err = NewSecret(); err != nil {
			return nil, err
		}
		log.Warn("no token secret configured: generated one; tokens will not survive a restart")
	}
	tokens, err := NewTokens(secret)
	if err != nil {
		return nil, err
	}
	// Defaults no match could have would otherwise refuse every create request, as if
	// the request were wrong.
	if err := validate(opts.Match.withDefaults(MatchOptions{})); err != nil {
		return nil, fmt.Errorf("relay: the relay's default match options: %w (check the serve flags: --tick-rate, --input-delay, --max-lead, ...)", err)
	}
	// A missing directory would otherwise fail every match as it starts.
	if opts.ReplayDir != "" {
		if err := os.MkdirAll(opts.ReplayDir, 0o755); err != nil {
			return nil, fmt.Errorf("relay: replay directory: %w; pick a writable --replay-dir, or \"\" to record nothing", err)
		}
	}
	s := &Server{
		opts: opts, log: log, tokens: tokens, metrics: newMetrics(), phases: clock.NewPhases(time.Now()), arbiters: newArbiters(),
		matches: map[uuid.UUID]*match{}, mirrors: map[uuid.UUID]*match{}, sessions: map[*session]struct{}{}, perAddr: map[string]int{},
		generatedSecret: len(opts.TokenSecret) == 0 || opts.SecretGenerated,
	}
	if err := s.startBackend(); err != nil {
		return nil, err
	}
	return s, nil
}

// Registry returns the server's Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// Tokens returns the server's token signer.
func (s *Server) Tokens() *Tokens { return s.tokens }

// CreateRequest asks for a new match.
type CreateRequest struct {
	// Sim is the simulation's name: any name sim.CheckName allows, known to the relay or
	// not (Options.AllowedSims may restrict them). SimVersion 0 means the latest version
	// of a sim the relay knows; for any other sim it is required. A version of a sim the
	// relay knows under other versions only is refused, naming those.
	Sim        string `json:"sim"`
	SimVersion uint32 `json:"sim_version,omitempty"`
	// Players is the number of player slots.
	Players int `json:"players"`
	// Seed of the sim; nil (absent) means a random seed.
	SeedOpt *uint64 `json:"seed,omitempty"`
	Seed    uint64  `json:"-"`
	// Params are sim-specific encoded parameters (base64 in JSON).
	Params []byte `json:"params,omitempty"`
	// SimFuel is the fuel budget of each call into a metered sim (a WebAssembly module):
	// 0 means sim.DefaultFuel, at most sim.MaxFuel. It is recorded in the Start record.
	SimFuel uint64 `json:"sim_fuel,omitempty"`
	// PlayerNames are optional display names, by slot.
	PlayerNames []string `json:"player_names,omitempty"`
	// Options override the server's per-match defaults; durations in JSON are
	// lobby_timeout_seconds, max_duration_seconds and spectator_delay_seconds.
	Options               MatchOptions `json:"options"`
	LobbyTimeoutSeconds   int          `json:"lobby_timeout_seconds,omitempty"`
	MaxDurationSeconds    int          `json:"max_duration_seconds,omitempty"`
	SpectatorDelaySeconds int          `json:"spectator_delay_seconds,omitempty"`
	// WebhookURL receives this match's lifecycle events instead of the relay's
	// --webhook-url (docs/operations.md, "Wiring your backend").
	WebhookURL string `json:"webhook_url,omitempty"`
}

// CreateResponse is what a client needs to join a new match.
type CreateResponse struct {
	MatchID        string       `json:"match_id"`
	URL            string       `json:"url"`
	PlayerTokens   []string     `json:"player_tokens"`
	SpectatorToken string       `json:"spectator_token"`
	Sim            string       `json:"sim"`
	SimVersion     uint32       `json:"sim_version"`
	SimFuel        uint64       `json:"sim_fuel"`
	Seed           uint64       `json:"seed"`
	Options        MatchOptions `json:"options"`

	// WatchURL and PlayURLs (by slot) open the match in a browser: the relay's own pages,
	// with the token in the URL fragment so it never reaches a server's logs. PlayURLs
	// are given only for a sim the play page plays (web.Playable: skirmish).
	WatchURL string   `json:"watch_url"`
	PlayURLs []string `json:"play_urls"`
	// WebTransport is the relay's WebTransport endpoint for the same match and tokens,
	// absent when the relay serves none (webtransport.go).
	WebTransport *WebTransportLink `json:"webtransport,omitempty"`
}

// CreateMatch validates req, starts the match's actor (in its lobby) and returns the
// join tokens. url is the WebSocket URL to hand out when Options.PublicURL is empty.
// Errors wrap ErrInvalid (change the request), ErrFull, ErrOverloaded or ErrClosing (try
// again later, or elsewhere) or ErrInternal (the relay could not record the match).
func (s *Server) CreateMatch(req CreateRequest, url string) (*CreateResponse, error) {
	if s.closing.Load() {
		return nil, ErrClosing // said first: the lasting reason (checked again when the match is added)
	}
	req, opts, err := s.checkRequest(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := s.overloaded(time.Now()); err != nil {
		return nil, err
	}
	id, err := s.startMatch(req, opts)
	if err != nil {
		return nil, err
	}
	return s.created(id, req, opts, url), nil
}

// simConfig is the config the match's sim is built from.
func (req CreateRequest) simConfig() sim.Config {
	return sim.Config{Seed: req.Seed, Players: req.Players, Params: req.Params, Fuel: req.SimFuel}
}

// checkRequest validates req and fills in its defaults: the sim's latest version, a
// random seed, the fuel, the match's options. What is wrong it says in the error.
func (s *Server) checkRequest(req CreateRequest) (CreateRequest, MatchOptions, error) {
	var opts MatchOptions
	if req.Players < 1 || req.Players > DefaultMaxPlayers {
		return req, opts, fmt.Errorf("players must be 1..%d, got %d", DefaultMaxPlayers, req.Players)
	}
	if err := s.allowSim(req.Sim); err != nil {
		return req, opts, err
	}
	if err := s.checkWebhook(req.WebhookURL); err != nil {
		return req, opts, err
	}
	if req.SimVersion == 0 {
		v, ok := sim.Latest(req.Sim)
		if !ok {
			return req, opts, fmt.Errorf("sim %q is not built into this relay nor loaded from its --sim-dir, so the request must name its sim_version (1 or more)", req.Sim)
		}
		req.SimVersion = v
	}
	if err := checkSimVersion(req.Sim, req.SimVersion); err != nil {
		return req, opts, err
	}
	if req.SeedOpt != nil {
		req.Seed = *req.SeedOpt
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		for _, x := range b {
			req.Seed = req.Seed<<8 | uint64(x)
		}
	}
	if req.SimFuel > sim.MaxFuel {
		return req, opts, fmt.Errorf("sim_fuel %d is above %d", req.SimFuel, uint64(sim.MaxFuel))
	}
	req.SimFuel = sim.Config{Fuel: req.SimFuel}.FuelOf()
	if err := checkKnownSim(req.Sim, req.SimVersion, req.simConfig()); err != nil {
		return req, opts, err
	}
	for _, d := range []struct {
		name    string
		seconds int
		max     time.Duration
	}{{"lobby_timeout_seconds", req.LobbyTimeoutSeconds, MaxLobbyTimeout}, {"max_duration_seconds", req.MaxDurationSeconds, MaxMatchDuration},
		{"spectator_delay_seconds", req.SpectatorDelaySeconds, MaxMatchDuration}} {
		if d.seconds > int(d.max/time.Second) {
			return req, opts, fmt.Errorf("%s %d is above %d (%s)", d.name, d.seconds, int(d.max/time.Second), d.max)
		}
	}
	opts = req.Options
	if req.LobbyTimeoutSeconds > 0 {
		opts.LobbyTimeout = time.Duration(req.LobbyTimeoutSeconds) * time.Second
	}
	if req.MaxDurationSeconds > 0 {
		opts.MaxDuration = time.Duration(req.MaxDurationSeconds) * time.Second
	}
	if req.SpectatorDelaySeconds > 0 {
		opts.SpectatorDelay = time.Duration(req.SpectatorDelaySeconds) * time.Second
	}
	opts = opts.withDefaults(s.opts.Match)
	return req, opts, validate(opts)
}

// startMatch records a new match from its creation (its file, or the cluster's copy) and
// starts its actor. Errors wrap ErrInternal, ErrClosing or ErrFull.
func (s *Server) startMatch(req CreateRequest, opts MatchOptions) (uuid.UUID, error) {
	id := uuid.New()
	m := newMatch(s, id, req, opts)
	if m.path != "" {
		// The file exists from the match's creation: a restart finds it in its lobby.
		f, err := os.OpenFile(m.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err == nil {
			if err = m.record(f, time.Now()); err != nil {
				m.releaseStream()
				_ = os.Remove(m.path)
			}
		}
		if err != nil {
			return id, fmt.Errorf("%w: cannot create the match's replay file: %w", ErrInternal, err)
		}
	} else if s.opts.Cluster != nil {
		// In a cluster the stream is copied from the match's creation, replay file or
		// not: if this node dies, a survivor takes the lobby over from the copy.
		if err := m.record(nil, time.Now()); err != nil {
			m.releaseStream()
			return id, fmt.Errorf("%w: cannot copy the match's stream to the cluster: %w", ErrInternal, err)
		}
	}
	refuse := func() {
		if m.writer != nil {
			m.releaseStream()
		}
		if m.path != "" {
			_ = os.Remove(m.path)
		}
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		refuse()
		return id, ErrClosing
	}
	if n := len(s.matches) - len(s.ended); n >= s.opts.MaxMatches {
		s.mu.Unlock()
		refuse()
		return id, fmt.Errorf("%w: the relay runs %d matches, its limit; try again later", ErrFull, n)
	}
	s.matches[id] = m
	s.matchWG.Add(1)
	s.mu.Unlock()
	m.attachHooks()
	go func() {
		defer s.matchWG.Done()
		m.run()
		s.retire(id)
	}()
	return id, nil
}

// created is the answer to a match's creation: its tokens and links.
func (s *Server) created(id uuid.UUID, req CreateRequest, opts MatchOptions, url string) *CreateResponse {
	if s.opts.PublicURL != "" {
		url = s.opts.PublicURL
	}
	// A token outlives its match: a player may rejoin (after a drop, or a restart) until
	// the match ends and for as long as the relay keeps it then.
	exp := time.Now().Add(max(s.opts.TokenTTL, opts.LobbyTimeout+opts.MaxDuration+s.opts.KeepEnded))
	resp := &CreateResponse{MatchID: id.String(), URL: url, Sim: req.Sim, SimVersion: req.SimVersion, SimFuel: req.SimFuel, Seed: req.Seed, Options: opts}
	for p := 1; p <= req.Players; p++ {
		resp.PlayerTokens = append(resp.PlayerTokens, s.tokens.Issue(Claims{Match: id, Role: RolePlayer, Slot: uint32(p), Expiry: exp}))
	}
	resp.SpectatorToken = s.tokens.Issue(Claims{Match: id, Role: RoleSpectator, Expiry: exp})
	var linkErr error
	if resp.WatchURL, resp.PlayURLs, linkErr = web.Links(resp.URL, PathWS, req.Sim, resp.SpectatorToken, resp.PlayerTokens); linkErr != nil {
		s.log.Warn("no browser links for this match", zap.Error(linkErr))
	}
	resp.WebTransport = s.webTransportLink(resp.URL)
	if w := resp.WebTransport; w != nil {
		resp.WatchURL = withWebTransport(resp.WatchURL, w)
		for i := range resp.PlayURLs {
			resp.PlayURLs[i] = withWebTransport(resp.PlayURLs[i], w)
		}
	}
	s.log.Info("match created", zap.String("match", id.String()), zap.String("sim", req.Sim), zap.Int("players", req.Players))
	return resp
}

func validate(o MatchOptions) error {
	switch {
	case o.TickRate > MaxTickRate:
		return fmt.Errorf("tick_rate %d is above %d", o.TickRate, MaxTickRate)
	case o.MinInputDelay > o.MaxInputDelay:
		return fmt.Errorf("min_input_delay %d is above max_input_delay %d", o.MinInputDelay, o.MaxInputDelay)
	case o.MaxInputDelay >= o.MaxLead:
		return fmt.Errorf("max_input_delay %d must be below max_lead %d", o.MaxInputDelay, o.MaxLead)
	case o.MaxLead > lockstep.MaxLeadLimit:
		return fmt.Errorf("max_lead %d is above %d", o.MaxLead, lockstep.MaxLeadLimit)
	case o.MaxPayload > 64<<10:
		return fmt.Errorf("max_payload %d is above 65536", o.MaxPayload)
	case o.InputDelay >= o.MaxLead:
		return fmt.Errorf("input_delay %d must be below max_lead %d", o.InputDelay, o.MaxLead)
	case o.LobbyTimeout > MaxLobbyTimeout:
		return fmt.Errorf("the lobby timeout %s is above %s", o.LobbyTimeout, MaxLobbyTimeout)
	case o.MaxDuration > MaxMatchDuration:
		return fmt.Errorf("the maximum duration %s is above %s", o.MaxDuration, MaxMatchDuration)
	case o.SpectatorDelay > MaxMatchDuration:
		return fmt.Errorf("the spectator delay %s is above %s", o.SpectatorDelay, MaxMatchDuration)
	}
	return nil
}

// retire keeps an ended match for the API and for late joiners (joinEnded), forgetting
// those ended more than Options.KeepEnded ago and the oldest past keepEnded.
func (s *Server) retire(id uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.matches[id]; m != nil && s.opts.Cluster != nil {
		s.opts.Cluster.Ended(id, m.moved)
		if m.moved { // it runs on another node now: joins are sent there
			delete(s.matches, id)
			return
		}
	}
	s.ended = append(s.ended, id)
	for len(s.ended) > 0 {
		old := s.matches[s.ended[0]]
		if len(s.ended) <= keepEnded && old != nil && time.Since(old.endedAt) <= s.opts.KeepEnded {
			break
		}
		delete(s.matches, s.ended[0])
		s.ended = s.ended[1:]
	}
}

func (s *Server) lookup(id uuid.UUID) *match {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.matches[id]
}

// EndMatch ends a match (End reason DELETED). It returns once the end is requested;
// ErrNotFound for an unknown match, ErrEnded for one that already ended.
func (s *Server) EndMatch(id uuid.UUID) error {
	m := s.lookup(id)
	if m == nil {
		return fmt.Errorf("%w: %s is not on this relay", ErrNotFound, id)
	}
	if MatchState(m.status.state.Load()) == StateEnded {
		return fmt.Errorf("%w: match %s ended (%s)", ErrEnded, id, pb.End_Reason(m.status.endReason.Load()))
	}
	m.requestEnd(pb.End_REASON_DELETED, "deleted through the API")
	return nil
}

// MatchDone returns a channel closed when the match's actor has stopped.
func (s *Server) MatchDone(id uuid.UUID) <-chan struct{} {
	if m := s.lookup(id); m != nil {
		return m.done
	}
	c := make(chan struct{})
	close(c)
	return c
}

// serveWS upgrades a request to the WebSocket protocol, admits it against the connection
// caps and starts its session on a goroutine of its own (session.run: the reader, which
// starts the writer), tracked by connWG; then it returns, so that net/http frees the
// request's state. A connection over a cap gets an Error and a 1013 close instead.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if s.closing.Load() {
		w.Header().Set("Retry-After", RetryAfter)
		http.Error(w, "the relay is shutting down; try again later", http.StatusServiceUnavailable)
		return
	}
	var raw *wsconn.Conn
	conn, err := websocket.Accept(wsconn.Wrap(w, &raw), r, &websocket.AcceptOptions{
		CompressionMode: websocket.CompressionDisabled,
		// Browsers send an Origin: other hosts than the relay's own are refused unless
		// allowed. Non-browser clients send none and are not affected.
		OriginPatterns: s.opts.AllowedOrigins,
	})
	if err != nil {
		return // Accept wrote the HTTP error
	}
	sess := newSession(s, conn, r.RemoteAddr)
	sess.raw = raw
	if dg, ok := r.Context().Value(datagramConnKey{}).(datagramConn); ok {
		sess.dg = dg
	}
	addr := remoteHost(r.RemoteAddr)
	if reason := s.admit(addr); reason != "" {
		s.metrics.connRejected.Inc()
		go sess.writeLoop()
		sess.fatal(pb.ErrorCode_ERROR_CODE_FULL, websocket.StatusTryAgainLater, reason)
		<-sess.writerDone
		return
	}
	s.mu.Lock()
	if s.closing.Load() {
		// The shutdown began after the check above and may already have kicked every
		// session it knew: this one goes the same way, never registered.
		s.unadmit(addr)
		s.mu.Unlock()
		go sess.writeLoop()
		sess.kick(websocket.StatusGoingAway, "the relay is shutting down")
		<-sess.writerDone
		return
	}
	s.sessions[sess] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	// The session runs on its own goroutine and the handler returns, so that net/http's
	// state for the request (the request, its headers, the connection's buffers, a deep
	// stack) is freed: it is about a third of an idle connection's memory.
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.sessions, sess)
			s.unadmit(addr)
			s.mu.Unlock()
			s.connWG.Done()
		}()
		// As net/http does for a handler: a bug that panics ends this connection (run's
		// own defers close it), not the relay.
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("a session panicked; its connection is closed", zap.Any("panic", p), zap.Stack("stack"))
			}
		}()
		sess.run()
	}()
}

// admit counts a new connection from addr against the server's and the address's caps;
// a non-empty reason refuses it (and counts nothing).
func (s *Server) admit(addr string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.connsNow.Load(); n >= int64(s.opts.MaxConnections) {
		return fmt.Sprintf("the relay serves %d connections, its limit; try again later", n)
	}
	if n := s.perAddr[addr]; n >= s.opts.MaxConnectionsPerAddress {
		return fmt.Sprintf("%d connections from your address, the relay's limit per address; close some first", n)
	}
	s.connsNow.Add(1)
	s.perAddr[addr]++
	return ""
}

// unadmit gives back what admit counted for a connection from addr; s.mu is held.
func (s *Server) unadmit(addr string) {
	if s.perAddr[addr]--; s.perAddr[addr] <= 0 {
		delete(s.perAddr, addr)
	}
	s.connsNow.Add(-1)
}

// remoteHost is the IP of a request's remote address (the whole string if it has no port).
func remoteHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// Shutdown stops taking matches and connections, ends every match (End reason SHUTDOWN,
// replay files closed with their end record), lets connections receive their End and
// closes them. It returns when all of that is done or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	defer s.stopBackend(ctx)
	s.mu.Lock()
	s.closing.Store(true)
	for _, m := range s.matches {
		m.requestEnd(pb.End_REASON_SHUTDOWN, "the relay is shutting down")
	}
	for _, m := range s.mirrors {
		m.requestEnd(pb.End_REASON_SHUTDOWN, "the relay is shutting down")
	}
	s.mu.Unlock()
	if err := wait(ctx, &s.matchWG); err != nil {
		return fmt.Errorf("relay: matches did not end in time: %w", err)
	}
	// Every match has ended and queued its End: the kick delivers what is queued, then
	// closes (a connection that does not read is cut after kickGrace).
	s.mu.Lock()
	for sess := range s.sessions {
		sess.kick(websocket.StatusGoingAway, "the relay is shutting down")
	}
	s.mu.Unlock()
	if err := wait(ctx, &s.connWG); err != nil {
		s.mu.Lock()
		for sess := range s.sessions {
			sess.stop()
		}
		s.mu.Unlock()
		return fmt.Errorf("relay: connections did not close in time: %w", err)
	}
	return nil
}

func wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
