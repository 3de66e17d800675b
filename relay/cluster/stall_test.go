package cluster_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/relay/cluster"
)

// A spectator served from JetStream (a mirror on a node that does not run the match)
// whose consumer is deleted mid-match is fed on from where it was, and gets the match's
// End: nothing skipped, nothing repeated (the client library's ordered consumer recreates
// itself). A fault test once left a spectator drawing the tick where a NATS server was
// killed; this is not that fault (it still needs a real server's kill to reproduce), but
// one part of it that holds.
func TestASpectatorWhoseConsumerIsLostGoesOnToTheEnd(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 2)
	a, b := c.node("relay-1"), c.node("relay-2")
	m := ownedBy(c, a, relay.CreateRequest{Players: 2, MaxDurationSeconds: 4})
	p1 := c.play(a.url, m.PlayerTokens[0], 1)
	p2 := c.play(a.url, m.PlayerTokens[1], 2)
	sp := c.watch(b.url, m.SpectatorToken) // a mirror on relay-2
	require.Eventually(t, func() bool { tick, ok := sp.sess.LastTick(); return ok && tick >= 60 }, 20*time.Second, time.Millisecond)

	js, err := jetstream.New(b.nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, cluster.StreamName)
	require.NoError(t, err)
	deleted := 0
	for name := range st.ConsumerNames(ctx).Name() {
		require.NoError(t, st.DeleteConsumer(ctx, name))
		deleted++
	}
	require.Positive(t, deleted, "the mirror's consumer")
	lost, _ := sp.sess.LastTick()
	t0 := time.Now()

	waitAll(t, []*player{p1, p2})
	waitWatcher(t, sp)
	t.Logf("consumer lost at the spectator's tick %d; it went on, and had the End %v later", lost, time.Since(t0))
	archive := a.archive(t, m.MatchID)
	assert.True(t, bytes.Equal(archive, sp.bytes()), "the spectator's copy is the archive (%d vs %d bytes)", len(sp.bytes()), len(archive))
}
