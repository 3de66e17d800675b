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

// When the node running a match dies, the node that claims it goes on from the dead
// node's cursor (in JetStream), to the match's own URL (which the cursor keeps, not the
// claimer's --webhook-url): the backend has every event once after de-duplication, in
// order, and at most one event twice (the one the dead node may have sent without
// storing its cursor).
func TestAMatchsWebhooksAreDeliveredByTheNodeThatClaimsItWhenItsNodeDies(t *testing.T) {
	const secret = "whsec-cluster"
	backend := hookbackend.New(func(h string, body []byte) error {
		return hooks.CheckSignature([]byte(secret), h, body, time.Now(), time.Minute)
	})
	defer backend.Close()
	c := newTestCluster(t, 3, func(name string, o *relay.Options) {
		o.Backend = relay.BackendOptions{WebhookURL: backend.URL + "/" + name, WebhookSecret: []byte(secret), WebhookMinBackoff: 20 * time.Millisecond}
	})
	m := c.create(relay.CreateRequest{Players: 2, MaxDurationSeconds: 3, WebhookURL: backend.URL + "/match"})
	owner := c.owner(m.MatchID)
	victim := c.node(owner)
	players := c.playAll([]*relay.CreateResponse{m}, map[string]string{m.MatchID: owner})[0]
	require.Eventually(t, func() bool {
		evs := backend.Of(m.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.started"
	}, 20*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { tick, ok := players[0].sess.LastTick(); return ok && tick >= 60 }, 20*time.Second, time.Millisecond)

	victim.kill()
	waitAll(t, players)
	var evs []hookbackend.Event
	require.Eventually(t, func() bool {
		evs = backend.Of(m.MatchID)
		return len(evs) > 0 && evs[len(evs)-1].Type == "match.ended"
	}, 30*time.Second, 10*time.Millisecond)
	var typ []string
	for i, e := range evs {
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.Equal(t, fmt.Sprintf("%s-%d", m.MatchID, i+1), e.ID)
		assert.Equal(t, "/match", e.Path, "the match's own URL, on every node")
		typ = append(typ, e.Type)
	}
	assert.Equal(t, []string{"match.created", "player.joined", "player.joined", "match.started",
		"relay.restarted", "player.reconnected", "player.reconnected", "match.ended"}, typ)
	deliveries, bad := backend.Counts()
	assert.Zero(t, bad)
	assert.LessOrEqual(t, deliveries, len(evs)+1, "the claiming node went on from the cursor, not from the first")
	var ended struct {
		Outcome struct {
			Verified bool `json:"verified"`
		} `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Ended, &ended))
	assert.True(t, ended.Outcome.Verified)
}
