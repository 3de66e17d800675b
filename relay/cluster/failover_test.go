package cluster_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

func TestAKilledRelayNodesMatchesMoveAndTheirPlayersFinishInSync(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	var matches []*relay.CreateResponse
	owners := map[string]string{}
	for range 3 {
		m := c.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 8})
		matches = append(matches, m)
		owners[m.MatchID] = c.owner(m.MatchID)
	}
	first := matches[0]
	victim := c.node(owners[first.MatchID])
	// A spectator of the doomed match on another node, and the players, all through
	// nodes that do not run their match.
	sp := c.watch(c.other(victim.name).url, first.SpectatorToken)
	players := c.playAll(matches, owners)
	require.Eventually(t, func() bool { tick, ok := players[0][0].sess.LastTick(); return ok && tick >= 120 }, 20*time.Second, time.Millisecond)

	killedAt, _ := players[0][0].sess.LastTick()
	t0 := time.Now()
	victim.kill()
	var newOwner string
	require.Eventually(t, func() bool {
		newOwner = c.running(first.MatchID)
		return newOwner != ""
	}, 20*time.Second, 10*time.Millisecond, "a survivor claims the match")
	assert.Equal(t, newOwner, c.owner(first.MatchID), "the cluster's list names the new owner")
	moved := time.Since(t0)

	for i, ps := range players {
		waitAll(t, ps)
		last, _ := ps[0].sess.LastTick()
		for j, p := range ps {
			tick, _ := p.sess.LastTick()
			assert.Equal(t, last, tick, "match %d player %d applied every tick", i, j+1)
			assert.Equal(t, ps[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "match %d player %d ends in sync", i, j+1)
		}
	}
	for j, p := range players[0] {
		assert.Positive(t, p.sess.Reconnects(), "player %d of the moved match reconnected", j+1)
	}
	waitWatcher(t, sp)

	archive := c.node(newOwner).archive(t, first.MatchID)
	assert.True(t, bytes.Equal(archive, sp.bytes()), "the spectator saved the archive's bytes across the move (%d vs %d)", len(sp.bytes()), len(archive))
	rp, err := replay.Load(bytes.NewReader(archive))
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	assert.Equal(t, pb.End_REASON_MAX_DURATION, rp.End.GetReason())
	restarted := false
	for _, e := range rp.Events {
		restarted = restarted || e.GetKind() == pb.Event_KIND_RELAY_RESTARTED
	}
	assert.True(t, restarted, "the move is recorded as a restart")
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, players[0][0].sess.Sim().Hash(), rep.FinalHash, "the replay re-simulates to the players' state")
	t.Logf("killed %s at tick %d; %s claimed the match %s later", victim.name, killedAt, newOwner, moved.Round(time.Millisecond))
}
