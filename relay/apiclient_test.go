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
	"github.com/tickrelay/tickrelay/sim/skirmish"
)

func TestPostMatchCreatesAMatchAndNamesWhatTheAPIRefused(t *testing.T) {
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
