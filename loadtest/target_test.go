package loadtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeveralRelayURLsSpreadTheConnectionsAndTheAPIGoesToTheFirst(t *testing.T) {
	tgt, err := remoteTarget(Config{URL: "ws://127.0.0.1:7400/v1/ws,ws://127.0.0.1:7410/v1/ws,wss://relay-3.example:443/v1/ws"})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:7400", tgt.apiBase)
	assert.Equal(t, []string{"ws://127.0.0.1:7400/v1/ws", "ws://127.0.0.1:7410/v1/ws", "wss://relay-3.example:443/v1/ws"}, tgt.spread)

	one, err := remoteTarget(Config{URL: "ws://127.0.0.1:7400/v1/ws"})
	require.NoError(t, err)
	assert.Empty(t, one.spread, "one relay: every connection dials the URL the match API hands out")

	_, err = remoteTarget(Config{URL: "ws://127.0.0.1:7400/v1/ws,http://127.0.0.1:7410"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "http://127.0.0.1:7410")
}
