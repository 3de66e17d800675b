package relay_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

func TestPostMatchCreatesAMatchAndNamesWhatTheAPIRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k"})
	ctx := context.Background()

	resp, err := relay.PostMatch(ctx, nil, h.http.URL, "k", relay.CreateRequest{Sim: skirmish.Name, Players: 2})
	require.NoError(t, err)
	assert.Len(t, resp.PlayerTokens, 2)
	assert.True(t, strings.HasSuffix(resp.URL, relay.PathWS), "players dial the WebSocket path: %s", resp.URL)

	_, err = relay.PostMatch(ctx, nil, h.http.URL, "wrong", relay.CreateRequest{Sim: skirmish.Name, Players: 2})
	var apiErr *relay.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusUnauthorized, apiErr.Code)
	assert.Contains(t, err.Error(), "admin key", "a refused key says so")

	_, err = relay.PostMatch(ctx, nil, h.http.URL, "k", relay.CreateRequest{Sim: "no-such-sim", Players: 2})
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusBadRequest, apiErr.Code)
	assert.Contains(t, apiErr.Body, "no-such-sim", "the relay's reason comes through")

	_, err = relay.PostMatch(ctx, nil, "http://127.0.0.1:1", "k", relay.CreateRequest{Sim: skirmish.Name, Players: 2})
	require.Error(t, err, "no relay there")
	assert.False(t, errors.As(err, &apiErr), "a failed request is not a refusal")
}

func TestDeleteMatchEndsItAndSaysWhenItWasAlreadyEnded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, relay.Options{AdminKey: "k"})
	ctx := context.Background()
	resp, err := relay.PostMatch(ctx, nil, h.http.URL, "k", relay.CreateRequest{Sim: skirmish.Name, Players: 2})
	require.NoError(t, err)

	info, err := relay.DeleteMatch(ctx, nil, h.http.URL, "k", resp.MatchID)
	require.NoError(t, err)
	assert.Equal(t, "ended", info.State)
	assert.Equal(t, resp.MatchID, info.ID)

	_, err = relay.DeleteMatch(ctx, nil, h.http.URL, "k", resp.MatchID)
	var apiErr *relay.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusConflict, apiErr.Code, "the second time: it already ended")

	_, err = relay.DeleteMatch(ctx, nil, h.http.URL, "k", "00000000-0000-4000-8000-000000000000")
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusNotFound, apiErr.Code)
}
