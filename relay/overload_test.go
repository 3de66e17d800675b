package relay_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

func TestARelayBehindItsClockRefusesNewMatchesWith503AndRetryAfter(t *testing.T) {
	t.Parallel()
	// A lateness limit of 1 ns makes every sealed tick late: the relay is "behind".
	h := newHarness(t, relay.Options{AdminKey: "k", MaxTickLateness: time.Nanosecond})
	code, body := h.do("POST", "/v1/matches", "k", `{"sim":"skirmish","players":2}`)
	require.Equal(t, http.StatusCreated, code, "a relay that sealed no tick is not behind: %s", body)
	resp := h.create(relay.CreateRequest{Players: 2})
	h.dialAll(resp, nil)

	for deadline := time.Now().Add(10 * time.Second); ; {
		code, body := h.do("POST", "/v1/matches", "k", `{"sim":"skirmish","players":2}`)
		if code == http.StatusServiceUnavailable {
			assert.Contains(t, body, "behind its clock")
			assert.Contains(t, body, "late (limit 1ns)")
			break
		}
		require.Equal(t, http.StatusCreated, code, body)
		require.True(t, time.Now().Before(deadline), "the relay never refused a match while every tick was late")
		time.Sleep(10 * time.Millisecond)
	}
	req, err := http.NewRequest("POST", h.http.URL+"/v1/matches", bytes.NewReader([]byte(`{"sim":"skirmish","players":2}`)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	res.Body.Close()
	assert.NotEmpty(t, res.Header.Get("Retry-After"), "a 503 says when to retry")
	_, err = h.srv.CreateMatch(relay.CreateRequest{Sim: "skirmish", Players: 2}, h.url)
	require.ErrorIs(t, err, relay.ErrOverloaded)
	assert.NotErrorIs(t, err, relay.ErrInvalid, "nothing is wrong with the request")

	metrics, err := http.Get(h.admin.URL + "/metrics")
	require.NoError(t, err)
	defer metrics.Body.Close()
	text, err := io.ReadAll(metrics.Body)
	require.NoError(t, err)
	assert.Contains(t, string(text), "tickrelay_ticks_late_total")
	assert.NotContains(t, string(text), "tickrelay_ticks_late_total 0\n")
	assert.NotContains(t, string(text), "tickrelay_matches_shed_total 0\n")
}

func TestARelayOnTimeTakesNewMatches(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{MaxTickLateness: time.Hour})
	resp := h.create(relay.CreateRequest{Players: 2})
	h.dialAll(resp, nil)
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, ok := h.srv.Match(mustUUID(t, resp.MatchID))
		require.True(t, ok)
		if info.Ticks > 30 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the match never ran")
		time.Sleep(10 * time.Millisecond)
	}
	_, err := h.srv.CreateMatch(relay.CreateRequest{Sim: "skirmish", Players: 2}, h.url)
	require.NoError(t, err)
}
