package cluster

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeOptionsSayWhatIsMissingAndDefaultTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"a name that is not a subject token", Options{Name: "relay.1", URL: "ws://a/v1/ws"}, "node name"},
		{"no name", Options{URL: "ws://a/v1/ws"}, "node name"},
		{"no public URL", Options{Name: "relay-1"}, "--node-url"},
		{"a lease shorter than two heartbeats", Options{Name: "relay-1", URL: "ws://a/v1/ws", Heartbeat: time.Second, LeaseTTL: time.Second}, "two heartbeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.opts.withDefaults(3)
			require.ErrorIs(t, err, ErrOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	o, err := Options{Name: "relay-1", URL: "ws://a/v1/ws"}.withDefaults(3)
	require.NoError(t, err)
	assert.Equal(t, 3, o.Replicas, "three NATS servers: three replicas")
	assert.Equal(t, DefaultHeartbeat, o.Heartbeat)
	assert.Equal(t, DefaultLeaseTTL, o.LeaseTTL)
	assert.Equal(t, DefaultArchive, o.Archive)
	assert.Equal(t, DefaultPublishTimeout, o.PublishTimeout)
	o, err = Options{Name: "relay-1", URL: "ws://a/v1/ws"}.withDefaults(1)
	require.NoError(t, err)
	assert.Equal(t, 1, o.Replicas, "one NATS server: one replica")
}

func TestADeadNodesMatchesSpreadOverTheSurvivorsAndEachHasOneClaimer(t *testing.T) {
	t.Parallel()
	live := []string{"relay-1", "relay-2", "relay-3"}
	per := map[string]int{}
	for range 600 {
		id := uuid.New()
		p := preferred(id, live)
		assert.Equal(t, p, preferred(id, live), "the same match, the same claimer")
		per[p]++
	}
	for _, n := range live {
		assert.InDelta(t, 200, per[n], 60, "node %s prefers about a third", n)
	}
	assert.Empty(t, preferred(uuid.New(), nil))
}

func TestHostOfAURL(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "127.0.0.1:7400", hostOf("ws://127.0.0.1:7400/v1/ws"))
	assert.Equal(t, "relay.example:443", hostOf("wss://relay.example:443/v1/ws"))
	assert.Equal(t, "", hostOf("::"))
}
