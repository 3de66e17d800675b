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
	"github.com/tickrelay/tickrelay/replay"
)

func TestLosingTheStreamLeadersNATSServerLosesNothing(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	m := c.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 5})
	owner := c.owner(m.MatchID)
	sp := c.watch(c.other(owner).url, m.SpectatorToken)
	var ps []*player
	for i, tok := range m.PlayerTokens {
		ps = append(ps, c.play(c.any().url, tok, uint32(i+1)))
	}
	require.Eventually(t, func() bool { tick, ok := ps[0].sess.LastTick(); return ok && tick >= 60 }, 20*time.Second, time.Millisecond)

	// Stop the NATS server that leads the stream: the worst one to lose.
	nc, err := cluster.Connect(cluster.ClientURLs(c.nats), "test", cluster.ConnectOptions{})
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, cluster.StreamName)
	require.NoError(t, err)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	require.NotNil(t, info.Cluster)
	stopped := ""
	for _, s := range c.nats {
		if s.Name() == info.Cluster.Leader {
			s.Stop()
			stopped = s.Name()
		}
	}
	require.NotEmpty(t, stopped, "the leader %q is one of the servers", info.Cluster.Leader)

	waitAll(t, ps)
	for j, p := range ps {
		assert.Equal(t, ps[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "player %d ends in sync", j+1)
	}
	waitWatcher(t, sp)
	archive := c.any().archive(t, m.MatchID)
	assert.True(t, bytes.Equal(archive, sp.bytes()), "the spectator saved the archive's bytes (%d vs %d)", len(sp.bytes()), len(archive))
	rp, err := replay.Load(bytes.NewReader(archive))
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, ps[0].sess.Sim().Hash(), rep.FinalHash)
	t.Logf("stopped %s (the stream leader) at tick ~60; players reconnected %d and %d times", stopped, ps[0].sess.Reconnects(), ps[1].sess.Reconnects())
}
