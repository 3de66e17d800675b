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
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/web"
)

// Handler serves the public endpoints:
//
//	GET    /v1/ws              the WebSocket endpoint (binary tickrelay.v1 messages)
//	POST   /v1/matches         create a match (admin key)
//	GET    /v1/matches         list matches (admin key)
//	GET    /v1/matches/{id}    one match's status (admin key)
//	DELETE /v1/matches/{id}    end a match (admin key)
//	GET    /, /watch, /play, /replay and their assets: the browser app (package web)
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", web.Handler())
	mux.HandleFunc("GET /v1/ws", s.serveWS)
	mux.HandleFunc("POST /v1/matches", s.admin(s.createMatch))
	mux.HandleFunc("GET /v1/matches", s.admin(s.listMatches))
	mux.HandleFunc("GET /v1/matches/{id}", s.admin(s.getMatch))
	mux.HandleFunc("DELETE /v1/matches/{id}", s.admin(s.deleteMatch))
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
				writeError(w, http.StatusUnauthorized, "missing or wrong admin key: send Authorization: Bearer <admin key>")
				return
			}
		}
		h(w, r)
	}
}

type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) createMatch(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON match request: "+err.Error())
		return
	}
	scheme := "ws"
	if r.TLS != nil {
		scheme = "wss"
	}
	resp, err := s.CreateMatch(req, scheme+"://"+r.Host+"/v1/ws")
	switch {
	case errors.Is(err, ErrClosing):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSON(w, http.StatusCreated, resp)
	}
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
}

func (m *match) info() MatchInfo {
	st := MatchState(m.status.state.Load())
	i := MatchInfo{
		ID: m.id.String(), State: st.String(), Sim: m.create.Sim, Players: m.create.Players,
		Connected: int(m.status.players.Load()), Spectators: int(m.status.spectators.Load()),
		Ticks: m.status.ticks.Load(), Commands: m.status.commands.Load(), Desyncs: m.status.desyncs.Load(),
		Created: m.created.UTC().Format(time.RFC3339),
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
		writeError(w, http.StatusBadRequest, "the match id must be a UUID")
		return
	}
	info, ok := s.Match(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no match %s on this relay", id))
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) deleteMatch(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "the match id must be a UUID")
		return
	}
	if err := s.EndMatch(id); err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	<-s.MatchDone(id)
	info, _ := s.Match(id)
	writeJSON(w, http.StatusOK, info)
}
