package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

func TestSeveralRelayURLsSpreadTheConnectionsAndTheAPIGoesToTheFirst(t *testing.T) {
	tgt, err := remoteTarget(Config{URL: "ws://127.0.0.1:7400/v1/ws,ws://127.0.0.1:7410/v1/ws,wss://relay-3.example:443/v1/ws"})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:7400", tgt.apiBase)
	assert.Equal(t, []string{"ws://127.0.0.1:7400/v1/ws", "ws://127.0.0.1:7410/v1/ws", "wss://relay-3.example:443/v1/ws"}, tgt.spread)

	one, err := remoteTarget(Config{URL: "ws://127.0.0.1:7400/v1/ws"})
	require.NoError(t, err)
	assert.Empty(t, one.spread, "one relay: every connection dials the URL the match API hands out")

	proxied, err := remoteTarget(Config{URL: "wss://games.example.com/relay/v1/ws"})
	require.NoError(t, err)
	assert.Equal(t, "https://games.example.com/relay", proxied.apiBase, "the API beside the endpoint, under the proxy's prefix")

	_, err = remoteTarget(Config{URL: "ws://127.0.0.1:7400/v1/ws,http://127.0.0.1:7410"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "http://127.0.0.1:7410")
}

func TestARefusedAdminKeyIsARelayErrorThatNamesTheFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "admin key required", http.StatusUnauthorized)
	}))
	defer srv.Close()
	tgt, err := remoteTarget(Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + relay.PathWS, AdminKey: "wrong"})
	require.NoError(t, err)
	_, err = tgt.create(context.Background(), relay.CreateRequest{Sim: "hashchain", Players: 2})
	require.ErrorIs(t, err, ErrRelay)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "admin key required", "the relay's own words")
	assert.Contains(t, err.Error(), "pass the relay's --admin-key")
	require.ErrorIs(t, tgt.end(context.Background(), "00000000-0000-0000-0000-000000000000"), ErrRelay)
}
