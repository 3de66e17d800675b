package cluster_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
)

// A node stopped cleanly (SIGTERM) hands its matches, running and in their lobby, to the
// survivors instead of ending them: no lease to wait for, no SHUTDOWN end record, and the
// players finish in sync.
func TestANodeThatShutsDownHandsItsMatchesOverAndTheirPlayersFinishInSync(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	running := c.createOn(c.node("relay-3"), relay.CreateRequest{Players: 2, MaxDurationSeconds: 4})
	leaving := c.node(c.owner(running.MatchID))
	var lobby *relay.CreateResponse
	for lobby == nil { // a second match on the same node, left in its lobby
		m := c.createOn(leaving, relay.CreateRequest{Players: 2, MaxDurationSeconds: 3})
		if c.owner(m.MatchID) == leaving.name {
			lobby = m
		}
	}
	players := c.playAll([]*relay.CreateResponse{running}, map[string]string{running.MatchID: leaving.name})[0]
	require.Eventually(t, func() bool { tick, ok := players[0].sess.LastTick(); return ok && tick >= 60 }, 20*time.Second, time.Millisecond)

	t0 := time.Now()
	assert.Equal(t, 2, leaving.leave(t), "both matches handed over")
	var to string
	require.Eventually(t, func() bool {
		to = c.running(running.MatchID)
		return to != "" && c.running(lobby.MatchID) != ""
	}, 20*time.Second, 10*time.Millisecond, "the survivors run both matches")
	t.Logf("%s left; %s runs its match %s later (the lease is %s)", leaving.name, to, time.Since(t0).Round(time.Millisecond), testLease)

	// The lobby's players join through any node and play it.
	lobbyPlayers := []*player{c.play(c.any().url, lobby.PlayerTokens[0], 1), c.play(c.any().url, lobby.PlayerTokens[1], 2)}
	for i, ps := range [][]*player{players, lobbyPlayers} {
		waitAll(t, ps)
		last, _ := ps[0].sess.LastTick()
		tick, _ := ps[1].sess.LastTick()
		assert.Equal(t, last, tick, "match %d: player 2 applied every tick", i)
		assert.Equal(t, ps[0].sess.Sim().Hash(), ps[1].sess.Sim().Hash(), "match %d: the players end in sync", i)
	}
	for j, p := range players {
		assert.Positive(t, p.sess.Reconnects(), "player %d of the running match reconnected", j+1)
		// The leaving node said so first, and a join waits where it lands while the
		// match moves: no player is refused (RETRY) and backs off.
		assert.EqualValues(t, 1, p.attempts.Load(), "player %d joined again at its first attempt", j+1)
	}
	rp, err := replay.Load(bytes.NewReader(c.node(to).archive(t, running.MatchID)))
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	assert.Equal(t, pb.End_REASON_MAX_DURATION, rp.End.GetReason(), "the match was not ended by the shutdown")
	assert.Len(t, rp.EventsOf(pb.Event_KIND_RELAY_RESTARTED), 1, "the hand-over is recorded as a restart")
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, players[0].sess.Sim().Hash(), rep.FinalHash)
}

// A node handing over stops its matches first and rewrites their entries after; in
// between its sweep, still running, sees entries of its own for matches it no longer
// runs. It must not claim them back: its closing server would refuse to resume them,
// and the claim would mark them ended.
func TestALeavingNodesSweepDoesNotTakeBackTheMatchesItHandsOver(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 2)
	n := c.node("relay-1")
	var m *relay.CreateResponse
	for m == nil {
		x := c.createOn(n, relay.CreateRequest{Players: 2})
		if c.owner(x.MatchID) == n.name {
			m = x
		}
	}
	id := uuid.MustParse(m.MatchID)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(t, n.srv.HandOver(ctx)) // what Node.HandOver does first
	time.Sleep(4 * testHeartbeat)           // a slow directory: sweeps run in the window
	given, err := n.node.HandOver(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, given)
	r, err := c.node("relay-2").node.Locate(id)
	require.NoError(t, err)
	assert.False(t, r.Ended, "the handed-over match was marked ended: %+v", r)
}
