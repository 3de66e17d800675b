package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

func (h *harness) do(method, path, key, body string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
	require.NoError(h.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(h.t, err)
	return res.StatusCode, string(b)
}

func TestMatchAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k3y"})

	t.Run("the admin key is required", func(t *testing.T) {
		code, body := h.do("GET", "/v1/matches", "", "")
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.Contains(t, body, "admin key")
		code, _ = h.do("GET", "/v1/matches", "wrong", "")
		assert.Equal(t, http.StatusUnauthorized, code)
	})

	var created relay.CreateResponse
	t.Run("POST creates a match with a token per slot and one for spectators", func(t *testing.T) {
		code, body := h.do("POST", "/v1/matches", "k3y", `{"sim":"skirmish","players":3,"seed":5,"options":{"input_delay":4}}`)
		require.Equal(t, http.StatusCreated, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		assert.Len(t, created.PlayerTokens, 3)
		assert.NotEmpty(t, created.SpectatorToken)
		assert.Equal(t, uint64(5), created.Seed)
		assert.Equal(t, 4, created.Options.InputDelay)
		assert.Equal(t, relay.DefaultMaxLead, created.Options.MaxLead)
		assert.True(t, strings.HasPrefix(created.URL, "ws://"), created.URL)
	})
	t.Run("bad requests say what is wrong", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"sim":"nope","players":2}`:                    "must name its sim_version",
			`{"sim":"my game","sim_version":1,"players":2}`: "bad simulation name",
			`{"sim":"","sim_version":1,"players":2}`:        "letters, digits",
			`{"sim":"skirmish","players":1}`:                "refuses",
			`{"sim":"skirmish","players":99}`:               "players must be",
			`{"sim":"skirmish","players":2,"bogus":1}`:      "unknown field",
			`not json`: "JSON",
			`{"sim":"skirmish","players":2,"options":{"max_input_delay":80}}`: "max_lead",
		} {
			code, got := h.do("POST", "/v1/matches", "k3y", body)
			assert.Equal(t, http.StatusBadRequest, code, body)
			assert.Contains(t, got, want, body)
		}
	})
	t.Run("GET lists and shows matches", func(t *testing.T) {
		code, body := h.do("GET", "/v1/matches", "k3y", "")
		require.Equal(t, http.StatusOK, code)
		var list []relay.MatchInfo
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		require.Len(t, list, 1)
		assert.Equal(t, "lobby", list[0].State)

		code, body = h.do("GET", "/v1/matches/"+created.MatchID, "k3y", "")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `"players": 3`)
		code, _ = h.do("GET", "/v1/matches/00000000-0000-0000-0000-000000000000", "k3y", "")
		assert.Equal(t, http.StatusNotFound, code)
		code, _ = h.do("GET", "/v1/matches/not-a-uuid", "k3y", "")
		assert.Equal(t, http.StatusBadRequest, code)
	})
	t.Run("DELETE ends a running match and its players are told", func(t *testing.T) {
		peers := h.dialAll(&created, nil)
		require.Eventually(t, func() bool { tick, ok := peers[0].sess.LastTick(); return ok && tick > 30 }, 10*time.Second, time.Millisecond)
		code, body := h.do("DELETE", "/v1/matches/"+created.MatchID, "k3y", "")
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, "REASON_DELETED")
		for _, e := range waitEnd(t, peers) {
			assert.Equal(t, "REASON_DELETED", e.GetReason().String())
		}
	})
}

func TestALobbyNobodyJoinsEndsAtItsTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{})
	resp := h.create(relay.CreateRequest{Players: 2, Options: relay.MatchOptions{LobbyTimeout: 50 * time.Millisecond}})
	id := h.waitDone(resp.MatchID, "the lobby did not time out")
	info, ok := h.srv.Match(id)
	require.True(t, ok)
	assert.Equal(t, "ended", info.State)
	assert.Equal(t, "REASON_LOBBY_TIMEOUT", info.EndReason)
}

func TestTheMatchAPISaysWhichKindOfErrorItIs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{MaxMatches: 1})
	code, body := h.do("POST", "/v1/matches", "", `{"sim":"skirmish","players":2}`)
	require.Equal(t, http.StatusCreated, code, body)
	var created relay.CreateResponse
	require.NoError(t, json.Unmarshal([]byte(body), &created))

	t.Run("a full relay is 503 with Retry-After, and ErrFull to Go callers", func(t *testing.T) {
		res := h.rawHTTP("POST", "/v1/matches", `{"sim":"skirmish","players":2}`)
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		_, err := h.srv.CreateMatch(relay.CreateRequest{Sim: "skirmish", Players: 2}, h.url)
		assert.ErrorIs(t, err, relay.ErrFull)
	})
	t.Run("an invalid request is 400, and ErrInvalid to Go callers", func(t *testing.T) {
		code, _ := h.do("POST", "/v1/matches", "", `{"sim":"skirmish","players":99}`)
		assert.Equal(t, http.StatusBadRequest, code)
		_, err := h.srv.CreateMatch(relay.CreateRequest{Sim: "nope", Players: 2}, h.url)
		assert.ErrorIs(t, err, relay.ErrInvalid)
		code, _ = h.do("DELETE", "/v1/matches/not-a-uuid", "", "")
		assert.Equal(t, http.StatusBadRequest, code)
	})
	t.Run("an unknown match is 404", func(t *testing.T) {
		code, body := h.do("DELETE", "/v1/matches/00000000-0000-0000-0000-000000000000", "", "")
		assert.Equal(t, http.StatusNotFound, code)
		assert.Contains(t, body, "not on this relay")
	})
	t.Run("ending a match that ended is 409", func(t *testing.T) {
		code, _ := h.do("DELETE", "/v1/matches/"+created.MatchID, "", "")
		require.Equal(t, http.StatusOK, code)
		code, body := h.do("DELETE", "/v1/matches/"+created.MatchID, "", "")
		assert.Equal(t, http.StatusConflict, code)
		assert.Contains(t, body, "REASON_DELETED")
		assert.ErrorIs(t, h.srv.EndMatch(mustUUID(t, created.MatchID)), relay.ErrEnded)
	})
	t.Run("a relay shutting down is 503 with Retry-After", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, h.srv.Shutdown(ctx))
		res := h.rawHTTP("POST", "/v1/matches", `{"sim":"skirmish","players":2}`)
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		res = h.rawHTTP("GET", "/v1/ws", "")
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
	})
}

// rawHTTP sends a request without an admin key and returns the response, its body read.
func (h *harness) rawHTTP(method, path, body string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
	require.NoError(h.t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}
