package relay

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/web"
)

// Handler serves the public endpoints:
//
//	GET    /v1/ws              the WebSocket endpoint (binary tickrelay.v1 messages)
//	POST   /v1/matches         create a match (admin key): 201 and a CreateResponse
//	GET    /v1/matches         list matches (admin key): 200 and []MatchInfo
//	GET    /v1/matches/{id}    one match's status (admin key): 200 and a MatchInfo
//	DELETE /v1/matches/{id}    end a match (admin key): 200 and its final MatchInfo
//	GET    /v1/players         a match's players' input delays (any join token of it): 200 and a PlayersInfo
//	GET    /, /watch, /play, /replay and their assets: the browser app (package web)
//	GET    /v1/sims/index.json, /v1/sims/{file}: the sim modules of its sim directory, metered, for the pages
//
// A refused request gets a JSON body {"error": "what was wrong and what to do"} and a
// status by the kind of error (see errors.go):
//
//	400 ErrInvalid       the request is malformed or asks for what the relay cannot do
//	401 ErrUnauthorized  the admin key is missing or wrong
//	401 ErrBadToken      the join token (GET /v1/players) is missing, wrong or expired
//	404 ErrNotFound      no match has that id on this relay
//	409 ErrEnded         DELETE of a match that already ended
//	503 ErrFull          the relay runs its most matches; Retry-After says when to retry
//	503 ErrClosing       the relay is shutting down; Retry-After says when to retry
//	503 ErrOverloaded    the relay is behind its clock; Retry-After says when to retry
//	500 ErrInternal      the relay failed at its own part (its replay file, the cluster)
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", web.Handler())
	mux.Handle("GET "+web.ModulesPath, web.ModuleHandler(s.opts.PageModules))
	mux.HandleFunc("GET "+PathWS, s.serveWS)
	mux.HandleFunc("GET /v1/players", s.players)
	mux.HandleFunc("POST "+PathMatches, s.admin(s.createMatch))
	mux.HandleFunc("GET "+PathMatches, s.admin(s.listMatches))
	mux.HandleFunc("GET "+PathMatches+"/{id}", s.admin(s.getMatch))
	mux.HandleFunc("DELETE "+PathMatches+"/{id}", s.admin(s.deleteMatch))
	return mux
}

// AdminHandler serves /metrics, /healthz, /readyz and, with withPprof, /debug/pprof/.
func (s *Server) AdminHandler(withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.closing.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// admin guards a handler with the admin key (Authorization: Bearer <key>), if one is set.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if key := s.opts.AdminKey; key != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(key)) != 1 {
				WriteError(w, fmt.Errorf("%w: send Authorization: Bearer <admin key>", ErrUnauthorized))
				return
			}
		}
		h(w, r)
	}
}

type apiError struct {
	Error string `json:"error"`
}

// RetryAfter is what a 503 tells a client to wait before it tries again, in seconds (the
// Retry-After header): the relay's and a relay cluster's.
const RetryAfter = "5"

// statusOf is the HTTP status of an error of the relay's API, by its kind.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrUnauthorized), errors.Is(err, ErrBadToken):
		return http.StatusUnauthorized
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrEnded):
		return http.StatusConflict
	case errors.Is(err, ErrFull), errors.Is(err, ErrClosing), errors.Is(err, ErrOverloaded), errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError // ErrInternal, and anything unforeseen
}

// WriteError answers a refused request of the match API: the status of err's kind (the
// Err* sentinels it wraps; 500 for none), with Retry-After for a 503, and the error as
// {"error": …}. The one error writer of the relay and of a relay cluster's API.
func WriteError(w http.ResponseWriter, err error) {
	code := statusOf(err)
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", RetryAfter)
	}
	writeJSON(w, code, apiError{err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// MaxRequestBody bounds a match request's body, on every node of a cluster: 64 KiB, far
// more than a request with every option and a sim's params needs.
const MaxRequestBody = 64 << 10

func (s *Server) createMatch(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		WriteError(w, fmt.Errorf("%w: the body must be a JSON match request: %w", ErrInvalid, err))
		return
	}
	scheme := "ws"
	if r.TLS != nil {
		scheme = "wss"
	}
	resp, err := s.CreateMatch(req, scheme+"://"+r.Host+PathWS)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

// MatchInfo is a match's status as the API shows it.
type MatchInfo struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	Sim        string `json:"sim"`
	Players    int    `json:"players"`
	Connected  int    `json:"players_connected"`
	Spectators int    `json:"spectators"`
	Ticks      uint64 `json:"ticks"`
	Commands   int64  `json:"commands"`
	Desyncs    int64  `json:"desyncs"`
	EndReason  string `json:"end_reason,omitempty"`
	Replay     string `json:"replay,omitempty"`
	Created    string `json:"created"`
	// Reports are the relay's forensics of the match's desyncs (docs/forensics.md).
	Reports []DesyncReportInfo `json:"desync_reports,omitempty"`
	// Arbitrations are the relay's own judgements of them, by re-simulation.
	Arbitrations []ArbitrationInfo `json:"arbitrations,omitempty"`
	// Heals are what the relay did for the players they found wrong.
	Heals []HealInfo `json:"heals,omitempty"`
}

// HealInfo is a Heal as the API shows it: the state's tick and hash (hex), the players
// healed and those that refused it (player number → reason).
type HealInfo struct {
	DesyncTick uint64            `json:"desync_tick"`
	Tick       uint64            `json:"tick"`
	Hash       string            `json:"hash"`
	Healed     []uint32          `json:"healed,omitempty"`
	Refused    map[string]string `json:"refused,omitempty"`
	Note       string            `json:"note,omitempty"`
	// Source is the player of the majority whose state healed (0: none, the relay's own
	// re-simulation's or the players' rebuild); Unverified says the hash it was checked
	// against is the majority's, not the relay's (a relay without the match's sim).
	Source     uint32 `json:"source,omitempty"`
	Unverified bool   `json:"unverified,omitempty"`
}

func healInfo(h *pb.Heal) HealInfo {
	i := HealInfo{DesyncTick: h.GetDesyncTick(), Tick: h.GetTick(), Hash: fmt.Sprintf("%016x", h.GetHash()), Healed: h.GetHealed(), Note: h.GetNote(),
		Source: h.GetSource(), Unverified: h.GetUnverified()}
	for _, r := range h.GetRefused() {
		if i.Refused == nil {
			i.Refused = map[string]string{}
		}
		i.Refused[fmt.Sprint(r.GetPlayer())] = r.GetReason()
	}
	return i
}

// ArbitrationInfo is an Arbitration as the API shows it: the relay's hash in hex, absent
// when it could not judge; the players whose group has it, absent when none has.
type ArbitrationInfo struct {
	DesyncTick uint64   `json:"desync_tick"`
	Hash       string   `json:"hash,omitempty"`
	Right      []uint32 `json:"right,omitempty"`
	Note       string   `json:"note,omitempty"`
	// Ticks the relay re-simulated to judge (from its shadow, or from tick 0).
	Ticks uint64 `json:"ticks_resimulated,omitempty"`
}

func arbitrationInfo(a *pb.Arbitration) ArbitrationInfo {
	i := ArbitrationInfo{DesyncTick: a.GetDesyncTick(), Note: a.GetNote(), Ticks: a.GetTicks()}
	if a.GetJudged() {
		i.Hash = fmt.Sprintf("%016x", a.GetHash())
	}
	if a.GetFound() {
		i.Right = a.GetPlayers()
	}
	return i
}

// DesyncReportInfo is a DesyncReport as the API shows it: hashes in hex, the first tick
// and line absent when not found.
type DesyncReportInfo struct {
	DesyncTick uint64            `json:"desync_tick"`
	AgreedTick *uint64           `json:"agreed_tick,omitempty"`
	FirstTick  *uint64           `json:"first_tick,omitempty"`
	Subsystems []string          `json:"subsystems,omitempty"`
	FirstLine  *uint32           `json:"first_line,omitempty"`
	Groups     []ReportGroupInfo `json:"groups"`
	Note       string            `json:"note,omitempty"`
}

// ReportGroupInfo is one hash group of a DesyncReportInfo.
type ReportGroupInfo struct {
	Hash      string   `json:"hash"`
	Player    uint32   `json:"player,omitempty"`
	FirstHash string   `json:"first_hash,omitempty"`
	Lines     []string `json:"lines,omitempty"`
	Missing   string   `json:"missing,omitempty"`
}

func reportInfo(r *pb.DesyncReport) DesyncReportInfo {
	i := DesyncReportInfo{DesyncTick: r.GetDesyncTick(), Subsystems: r.GetSubsystems(), Note: r.GetNote()}
	if r.GetHasAgreed() {
		t := r.GetAgreedTick()
		i.AgreedTick = &t
	}
	if r.GetFoundTick() {
		t := r.GetFirstTick()
		i.FirstTick = &t
	}
	if r.GetFoundLine() {
		l := r.GetFirstLine()
		i.FirstLine = &l
	}
	for _, g := range r.GetGroups() {
		gi := ReportGroupInfo{Hash: fmt.Sprintf("%016x", g.GetHash()), Player: g.GetPlayer(), Lines: g.GetLines(), Missing: g.GetMissing()}
		if r.GetFoundTick() && g.GetPlayer() != 0 && g.GetMissing() == "" {
			gi.FirstHash = fmt.Sprintf("%016x", g.GetFirstHash())
		}
		i.Groups = append(i.Groups, gi)
	}
	return i
}

// matchStatus is what the API reads without asking the actor.
type matchStatus struct {
	state      atomic.Int32
	ticks      atomic.Uint64 // ticks sealed
	players    atomic.Int32  // connected players
	spectators atomic.Int32
	commands   atomic.Int64
	desyncs    atomic.Int64
	reports    atomic.Pointer[[]DesyncReportInfo] // replaced whole by the actor: readers never see a slice change
	// arbitrations, likewise.
	arbitrations atomic.Pointer[[]ArbitrationInfo]
	heals        atomic.Pointer[[]HealInfo]
	endReason    atomic.Int32
	// delays holds each slot's suggested input delay in ticks, as its session last
	// answered a ping (the match's initial delay before): GET /v1/players shows them.
	delays []atomic.Int32
}

// appendShared appends v to the slice p holds for readers of other goroutines: a new
// slice each time, so a reader's never changes under it. The actor is the only writer.
func appendShared[T any](p *atomic.Pointer[[]T], v T) {
	var s []T
	if old := p.Load(); old != nil {
		s = slices.Clone(*old)
	}
	s = append(s, v)
	p.Store(&s)
}

func (m *match) info() MatchInfo {
	st := MatchState(m.status.state.Load())
	i := MatchInfo{
		ID: m.id.String(), State: st.String(), Sim: m.create.Sim, Players: m.create.Players,
		Connected: int(m.status.players.Load()), Spectators: int(m.status.spectators.Load()),
		Ticks: m.status.ticks.Load(), Commands: m.status.commands.Load(), Desyncs: m.status.desyncs.Load(),
		Created: m.created.UTC().Format(time.RFC3339),
	}
	if rs := m.status.reports.Load(); rs != nil {
		i.Reports = *rs
	}
	if as := m.status.arbitrations.Load(); as != nil {
		i.Arbitrations = *as
	}
	if hs := m.status.heals.Load(); hs != nil {
		i.Heals = *hs
	}
	if st == StateEnded {
		i.EndReason = pb.End_Reason(m.status.endReason.Load()).String()
		i.Replay = m.path
	}
	return i
}

// Matches returns every match the registry holds, newest last.
func (s *Server) Matches() []MatchInfo {
	s.mu.Lock()
	ms := make([]*match, 0, len(s.matches))
	for _, m := range s.matches {
		ms = append(ms, m)
	}
	s.mu.Unlock()
	out := make([]MatchInfo, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.info())
	}
	slices.SortFunc(out, func(a, b MatchInfo) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Match returns one match's status.
func (s *Server) Match(id uuid.UUID) (MatchInfo, bool) {
	m := s.lookup(id)
	if m == nil {
		return MatchInfo{}, false
	}
	return m.info(), true
}

func (s *Server) listMatches(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Matches())
}

func (s *Server) getMatch(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		WriteError(w, fmt.Errorf("%w: the match id must be a UUID", ErrInvalid))
		return
	}
	info, ok := s.Match(id)
	if !ok {
		WriteError(w, fmt.Errorf("%w: %s is not on this relay", ErrNotFound, id))
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) deleteMatch(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		WriteError(w, fmt.Errorf("%w: the match id must be a UUID", ErrInvalid))
		return
	}
	if err := s.EndMatch(id); err != nil {
		WriteError(w, err)
		return
	}
	<-s.MatchDone(id)
	info, _ := s.Match(id)
	writeJSON(w, http.StatusOK, info)
}
