package cluster_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/relay/cluster"
	"github.com/tickrelay/tickrelay/replay"
)

func TestMatchesSpreadOverNodesAndEveryNodeServesPlayersSpectatorsAndReplays(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)

	// Three matches, created one after another through one node, land one on each node
	// (it places them by the directory, forwarding the creates over NATS).
	var matches []*relay.CreateResponse
	for i := range 3 {
		req := relay.CreateRequest{Players: 2, MaxDurationSeconds: 3}
		if i == 2 {
			req.SpectatorDelaySeconds = 1
		}
		matches = append(matches, c.createOn(c.nodes[0], req))
	}
	owners := map[string]string{}
	for _, m := range matches {
		owners[m.MatchID] = c.owner(m.MatchID)
	}
	assert.ElementsMatch(t, []string{"relay-1", "relay-2", "relay-3"}, []string{owners[matches[0].MatchID], owners[matches[1].MatchID], owners[matches[2].MatchID]},
		"one match on each node")
	var nodes []cluster.NodeStatus
	require.Equal(t, http.StatusOK, c.any().api(t, "GET", "/v1/nodes", nil, &nodes))
	require.Len(t, nodes, 3)
	for _, n := range nodes {
		assert.True(t, n.Alive, "node %s", n.Name)
	}
	for _, m := range matches {
		var info relay.MatchInfo
		require.Equal(t, http.StatusOK, c.any().api(t, "GET", "/v1/matches/"+m.MatchID, nil, &info), "any node answers for any match")
		assert.Equal(t, m.MatchID, info.ID)
	}
	// A match deleted through a node that does not run it ends on its node.
	doomed := c.create(relay.CreateRequest{Players: 2})
	var deleted relay.MatchInfo
	require.Equal(t, http.StatusOK, c.other(c.owner(doomed.MatchID)).api(t, "DELETE", "/v1/matches/"+doomed.MatchID, nil, &deleted))
	assert.Equal(t, "ended", deleted.State)
	assert.Equal(t, pb.End_REASON_DELETED.String(), deleted.EndReason)

	// A spectator of the first match on every node, from before it starts.
	first := matches[0]
	var watchers []*watcher
	for _, n := range c.nodes {
		watchers = append(watchers, c.watch(n.url, first.SpectatorToken))
	}
	// A spectator of the delayed match on a node that does not run it never sees a frame
	// less than the delay (60 ticks) behind the match's live tick.
	delayed := matches[2]
	delayedOwner := c.node(owners[delayed.MatchID])
	var checked, early atomic.Int64
	dw := c.watch(c.other(delayedOwner.name).url, delayed.SpectatorToken, func(_ *client.Session, f lockstep.Frame) {
		info, ok := delayedOwner.srv.Match(uuid.MustParse(delayed.MatchID))
		if !ok || info.State != "running" {
			return // at the end the rest of the stream is released at once
		}
		checked.Add(1)
		if f.Tick+testRate > info.Ticks {
			early.Add(1)
		}
	})
	assert.Equal(t, uint64(testRate), dw.sess.Welcome().GetDelayTicks())

	// Players join through nodes that do not run their match and are sent to its node.
	players := c.playAll(matches, owners)
	for i, ps := range players {
		waitAll(t, ps)
		last, _ := ps[0].sess.LastTick()
		assert.GreaterOrEqual(t, last, uint64(170), "match %d ran", i)
		for j, p := range ps {
			tick, _ := p.sess.LastTick()
			assert.Equal(t, last, tick, "match %d player %d applied every tick", i, j+1)
			assert.Equal(t, ps[0].sess.Sim().Hash(), p.sess.Sim().Hash(), "match %d player %d ends in sync", i, j+1)
		}
	}

	waitWatcher(t, dw)
	assert.Greater(t, checked.Load(), int64(60), "the delayed spectator watched the match while it ran")
	assert.Zero(t, early.Load(), "frames arrived less than the delay behind the live tick")
	assert.True(t, bytes.Equal(delayedOwner.file(t, delayed.MatchID), dw.bytes()), "the delayed spectator saved the replay file's bytes")

	owner := c.node(owners[first.MatchID])
	<-owner.srv.MatchDone(uuid.MustParse(first.MatchID))
	file := owner.file(t, first.MatchID)
	for i, w := range watchers {
		waitWatcher(t, w)
		assert.True(t, bytes.Equal(file, w.bytes()), "the spectator on %s saved the replay file's bytes (%d vs %d)", c.nodes[i].name, len(w.bytes()), len(file))
	}
	for _, n := range c.nodes {
		assert.True(t, bytes.Equal(file, n.archive(t, first.MatchID)), "%s serves the replay file from JetStream", n.name)
	}
	rp, err := replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	assert.Equal(t, pb.End_REASON_MAX_DURATION, rp.End.GetReason())
	_, err = replay.Verify(rp, replay.VerifyOptions{})
	assert.NoError(t, err)
}

// A full cluster answers a create as a full relay does: 503 with Retry-After, whichever
// node the create reaches and wherever it is placed (forwarded over NATS or served
// locally), with the relay's error.
func TestAFullClusterIs503WithRetryAfterThroughEveryNode(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, func(_ string, o *relay.Options) { o.MaxMatches = 1 })
	for range 3 {
		c.createOn(c.nodes[0], relay.CreateRequest{Players: 2})
	}
	for _, n := range c.nodes {
		req, err := http.NewRequest(http.MethodPost, n.base+relay.PathMatches, strings.NewReader(`{"sim":"skirmish","players":2}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testKey)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "through %s: %s", n.name, body)
		assert.Equal(t, relay.RetryAfter, res.Header.Get("Retry-After"), "through %s", n.name)
		assert.Contains(t, string(body), `"error"`)
	}
}

// Every refusal of a cluster's match API is the relay's contract (relay.WriteError): the
// status of the relay's error kind, its JSON body, Retry-After on every 503 — also for
// what only a cluster can fail at, such as a match whose node just died.
func TestTheClustersRefusalsAreTheRelaysContract(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	m := ownedBy(c, c.node("relay-1"), relay.CreateRequest{Players: 2})
	get := func(n *testNode, path string) (int, http.Header, string) {
		req, err := http.NewRequest(http.MethodGet, n.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testKey)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(body)
	}
	other := c.node("relay-2")
	for _, tc := range []struct {
		path string
		code int
		kind error
	}{
		{relay.PathMatches + "/not-a-uuid", http.StatusBadRequest, relay.ErrInvalid},
		{relay.PathMatches + "/" + uuid.NewString(), http.StatusNotFound, relay.ErrNotFound},
		{relay.PathMatches + "/" + uuid.NewString() + "/replay", http.StatusNotFound, relay.ErrNotFound},
	} {
		code, _, body := get(other, tc.path)
		assert.Equal(t, tc.code, code, tc.path)
		var e struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(body), &e), "%s: a JSON error: %s", tc.path, body)
		assert.True(t, strings.HasPrefix(e.Error, tc.kind.Error()), "%s: %q names the relay's kind %q", tc.path, e.Error, tc.kind)
	}

	c.node("relay-1").kill() // its directory entry stays until the lease lapses
	code, h, body := get(other, relay.PathMatches+"/"+m.MatchID)
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Equal(t, relay.RetryAfter, h.Get("Retry-After"))
	assert.Contains(t, body, relay.ErrUnavailable.Error())
	assert.Contains(t, body, "unreachable")
}
