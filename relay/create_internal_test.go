package relay

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a create request may ask for, and what the relay says when it cannot serve one.
// Found by a review; each failed before its fix.

func createServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.TokenSecret == nil {
		opts.TokenSecret = bytes.Repeat([]byte{7}, 32)
	}
	srv, err := New(opts, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
	})
	return srv
}

// Durations past their bounds are refused. (max_duration_seconds 614891470 wrapped to a
// 26-tick match at 30 Hz, 18446744074 to 0.29 s.)
func TestACreateRequestsDurationsHaveBounds(t *testing.T) {
	t.Parallel()
	srv := createServer(t, Options{})
	for _, req := range []CreateRequest{
		{MaxDurationSeconds: 614891470}, {MaxDurationSeconds: 18446744074}, {LobbyTimeoutSeconds: 90000}, {SpectatorDelaySeconds: 700000},
	} {
		req.Sim, req.SimVersion, req.Players = "anysim", 1, 2
		_, err := srv.CreateMatch(req, "ws://x/v1/ws")
		require.ErrorIs(t, err, ErrInvalid, "%+v", req)
		assert.Contains(t, err.Error(), "is above")
	}
	resp, err := srv.CreateMatch(CreateRequest{Sim: "anysim", SimVersion: 1, Players: 2, MaxDurationSeconds: 7 * 24 * 3600}, "ws://x/v1/ws")
	require.NoError(t, err)
	assert.Equal(t, MaxMatchDuration, resp.Options.MaxDuration)
}

// An initial input delay at or above the max lead is refused: every command a client
// aims that far ahead would be refused as too far ahead.
func TestAnInputDelayAtTheMaxLeadIsRefused(t *testing.T) {
	t.Parallel()
	srv := createServer(t, Options{})
	_, err := srv.CreateMatch(CreateRequest{Sim: "anysim", SimVersion: 1, Players: 2, Options: MatchOptions{InputDelay: 100}}, "ws://x/v1/ws")
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "input_delay 100 must be below max_lead 60")
}

// The relay's own failure (here its replay directory became a file) is a 500, not a 400
// that tells the client to change a request that was fine.
func TestAReplayFileTheRelayCannotCreateIsA500(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "replays")
	srv := createServer(t, Options{ReplayDir: dir})
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, nil, 0o644))
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", PathMatches, strings.NewReader(`{"sim":"anysim","sim_version":1,"players":2}`)))
	assert.Equal(t, http.StatusInternalServerError, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "cannot create the match's replay file")
}

// Default match options no match could have are refused when the server is made, naming
// them, rather than failing every create request as the request's fault.
func TestInvalidDefaultMatchOptionsAreRefusedAtStart(t *testing.T) {
	t.Parallel()
	_, err := New(Options{TokenSecret: bytes.Repeat([]byte{7}, 32), Match: MatchOptions{MaxInputDelay: 80}}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "max_input_delay 80 must be below max_lead 60")
}

// A token outlives its match: a player may rejoin until the match's maximum duration and
// the time the relay keeps it after. (Tokens expired after TokenTTL, whatever the match.)
func TestATokenOutlivesItsMatch(t *testing.T) {
	t.Parallel()
	srv := createServer(t, Options{TokenTTL: time.Hour})
	resp, err := srv.CreateMatch(CreateRequest{Sim: "anysim", SimVersion: 1, Players: 2, MaxDurationSeconds: 3 * 3600}, "ws://x/v1/ws")
	require.NoError(t, err)
	_, err = srv.tokens.Check(resp.PlayerTokens[0], time.Now().Add(3*time.Hour))
	assert.NoError(t, err)
}
