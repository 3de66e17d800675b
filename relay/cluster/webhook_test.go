package cluster_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/hookbackend"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/relay/internal/hooks"
)

// Two nodes die, the survivor delivers what they had not, going on from their cursors
// (in JetStream) to each match's own URL (which the cursor keeps, not the survivor's
// --webhook-url):
//   - running: a match still playing when its node dies; the survivor claims it, and its
//     webhooks with it;
//   - ended: a match that ended on a node whose backend was not answering, the node then
//     dying. Nobody claims an ended match to run it, but its directory entry says its
//     webhooks are not all delivered, so the survivor claims their delivery after the
//     lease and sends the rest from the match's stream.
//
// The backend has every event once after de-duplication, in order, and at most one event
// twice a match (the one a dying node may have sent without storing its cursor).
func TestWhenNodesDieTheWebhooksOfTheirRunningAndEndedMatchesAreDeliveredByTheSurvivor(t *testing.T) {
	t.Parallel()
	const secret = "whsec-cluster"
	backend := hookbackend.New(func(h string, body []byte) error {
		return hooks.CheckSignature([]byte(secret), h, body, time.Now(), time.Minute)
	})
	defer backend.Close()
	c := newTestCluster(t, 3, func(name string, o *relay.Options) {
		o.Backend = relay.BackendOptions{WebhookURL: backend.URL + "/" + name, WebhookSecret: []byte(secret),
			WebhookMinBackoff: 20 * time.Millisecond, WebhookMaxBackoff: 100 * time.Millisecond}
	})
	// The backend answers the ended match's node its first two events, then nothing: that
	// node is stuck at the second join (event 3) when the match ends.
	backend.DeadAfter("/ended", 2)
	ended := c.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 1, WebhookURL: backend.URL + "/ended"})
	running := c.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 3, WebhookURL: backend.URL + "/running"})
	owners := map[string]string{ended.MatchID: c.owner(ended.MatchID), running.MatchID: c.owner(running.MatchID)}
	require.NotEqual(t, owners[ended.MatchID], owners[running.MatchID], "placed on the least loaded nodes")
	var survivor *testNode
	for _, n := range c.live() {
		if n.name != owners[ended.MatchID] && n.name != owners[running.MatchID] {
			survivor = n
		}
	}
	require.NotNil(t, survivor)
	// Every player joins through the survivor (which redirects them), the one URL they
	// will be able to reconnect through.
	var players [2][]*player
	for i, m := range []*relay.CreateResponse{ended, running} {
		for slot, tok := range m.PlayerTokens {
			players[i] = append(players[i], c.play(survivor.url, tok, uint32(slot+1)))
		}
	}
	waitAll(t, players[0])
	require.Len(t, backend.Of(ended.MatchID), 2)
	require.Eventually(t, func() bool {
		evs := backend.Of(running.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.started"
	}, 20*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { tick, ok := players[1][0].sess.LastTick(); return ok && tick >= 60 }, 20*time.Second, time.Millisecond)

	c.node(owners[ended.MatchID]).kill() // it may still send event 3, nothing after
	c.node(owners[running.MatchID]).kill()
	backend.Alive("/ended")
	waitAll(t, players[1])
	for _, m := range []struct {
		id, path string
		types    []string
	}{
		{ended.MatchID, "/ended", []string{"match.created", "player.joined", "player.joined", "match.started", "match.ended"}},
		{running.MatchID, "/running", []string{"match.created", "player.joined", "player.joined", "match.started",
			"relay.restarted", "player.reconnected", "player.reconnected", "match.ended"}},
	} {
		var evs []hookbackend.Event
		require.Eventually(t, func() bool {
			evs = backend.Of(m.id)
			return len(evs) > 0 && evs[len(evs)-1].Type == "match.ended"
		}, 30*time.Second, 10*time.Millisecond, m.path)
		var typ []string
		for i, e := range evs {
			assert.Equal(t, uint64(i+1), e.Seq, m.path)
			assert.Equal(t, fmt.Sprintf("%s-%d", m.id, i+1), e.ID)
			assert.Equal(t, m.path, e.Path, "the match's own URL, on every node")
			typ = append(typ, e.Type)
		}
		assert.Equal(t, m.types, typ)
		var end struct {
			Reason  string `json:"reason"`
			Outcome struct {
				Verified bool `json:"verified"`
			} `json:"outcome"`
		}
		require.NoError(t, json.Unmarshal(evs[len(evs)-1].Ended, &end))
		assert.Equal(t, "max_duration", end.Reason)
		assert.True(t, end.Outcome.Verified)
	}
	deliveries, bad := backend.Counts()
	assert.Zero(t, bad)
	assert.LessOrEqual(t, deliveries, 5+8+2, "the survivor went on from the cursors, not from the first")
}
