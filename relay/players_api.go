package relay

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// PlayersInfo is what GET /v1/players answers: what a spectator's page shows of each
// player beyond the stream, which carries no input delays.
type PlayersInfo struct {
	MatchID string       `json:"match_id"`
	Players []PlayerInfo `json:"players"`
}

// PlayerInfo is one slot's live settings.
type PlayerInfo struct {
	ID uint32 `json:"id"`
	// InputDelay is the relay's suggested input delay for the slot, in ticks: what its
	// last ping was answered with (the match's initial delay before any ping).
	InputDelay int `json:"input_delay"`
}

// players answers GET /v1/players for the match of the join token in the Authorization
// header (a player's or a spectator's): the browser pages hold a token, not the admin key.
func (s *Server) players(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		WriteError(w, fmt.Errorf("%w: send Authorization: Bearer <a join token of the match>", ErrBadToken))
		return
	}
	c, err := s.checkToken(tok, time.Now())
	if err != nil {
		WriteError(w, fmt.Errorf("%w: %w", ErrBadToken, err))
		return
	}
	m := s.lookup(c.Match)
	if m == nil {
		WriteError(w, fmt.Errorf("%w: no match %s on this relay", ErrNotFound, c.Match))
		return
	}
	info := PlayersInfo{MatchID: m.id.String(), Players: make([]PlayerInfo, len(m.status.delays))}
	for i := range m.status.delays {
		info.Players[i] = PlayerInfo{ID: uint32(i + 1), InputDelay: int(m.status.delays[i].Load())}
	}
	writeJSON(w, http.StatusOK, info)
}
