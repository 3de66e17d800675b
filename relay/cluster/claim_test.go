package cluster_test

import (
	"bytes"
	"context"
	"hash/fnv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

func ownedBy(c *testCluster, n *testNode, req relay.CreateRequest) *relay.CreateResponse {
	for {
		x := c.createOn(n, req)
		if c.owner(x.MatchID) == n.name {
			return x
		}
	}
}

// playing is a 2-player match that node n owns and runs, past tick `past`.
func playing(t *testing.T, c *testCluster, n *testNode, past uint64) (*relay.CreateResponse, uuid.UUID) {
	m := ownedBy(c, n, relay.CreateRequest{Players: 2, MaxDurationSeconds: 30})
	p1 := c.play(n.url, m.PlayerTokens[0], 1)
	c.play(n.url, m.PlayerTokens[1], 2)
	require.Eventually(t, func() bool { tick, ok := p1.sess.LastTick(); return ok && tick >= past }, 20*time.Second, time.Millisecond)
	return m, uuid.MustParse(m.MatchID)
}

// A claim whose first write (the RELAY_RESTARTED event) JetStream refuses, here because
// the owner, slow rather than dead, wrote once more between the claimer's reading of the
// stream and that write, gives the match back to its owner. (It marked the match ended:
// the owner ran it on while the directory said ended, and when that owner died, nobody
// resumed the match.)
func TestAClaimWhoseWriteIsRefusedGivesTheMatchBackToItsOwner(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	a := c.node("relay-1")
	m, id := playing(t, c, a, 60)

	b := c.node("relay-2")
	b.node.SlowClaims(300 * time.Millisecond) // a writes at least once in those 300 ms
	b.node.ClaimNow(id)
	b.node.SlowClaims(0)

	r, err := c.node("relay-3").node.Locate(id)
	require.NoError(t, err)
	info, ok := a.srv.Match(id)
	t.Logf("directory: %+v; relay-1 runs it: %v %s", r, ok, info.State)
	assert.False(t, r.Ended && ok && info.State == "running", "the directory says ended while relay-1 still runs the match")
	assert.Eventually(t, func() bool { r, err := c.node("relay-3").node.Locate(id); return err == nil && r.URL == a.url }, 5*time.Second, 10*time.Millisecond,
		"the directory sends players to relay-1, which runs the match")

	// Now the owner dies for real: the match is resumed elsewhere.
	a.kill()
	assert.Eventually(t, func() bool { return c.running(m.MatchID) != "" }, 3*testLease+time.Second, 20*time.Millisecond,
		"nobody resumed the match after its owner died: lost")
}

// SIGTERM on a node in the middle of claiming a failed node's match: the resume meets the
// closing server (ErrClosing), and the match goes to a third node. (It was marked ended.)
func TestAClaimInterruptedByShutdownLeavesTheMatchToAnotherNode(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	a := c.node("relay-1")
	m, id := playing(t, c, a, 30)
	a.kill()

	b := c.node("relay-2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The interleaving: SIGTERM's first step (srv.HandOver sets closing) lands while
	// relay-2's claim is between its compare-and-set and ResumeFrom.
	require.NoError(t, b.srv.HandOver(ctx))
	b.node.ClaimNow(id)
	_, err := b.node.HandOver(ctx)
	require.NoError(t, err)
	b.stop(t)
	b.mu.Lock()
	b.dead = true
	b.mu.Unlock()

	resumed := assert.Eventually(t, func() bool { return c.running(m.MatchID) != "" }, 3*testLease+time.Second, 20*time.Millisecond)
	r, err := c.node("relay-3").node.Locate(id)
	require.NoError(t, err)
	t.Logf("directory on relay-3: %+v", r)
	assert.True(t, resumed, "relay-3 never resumed the match (the directory says ended=%v)", r.Ended)
}

// A spectator whose node stops running the match (moved off: fenced, a publish timeout,
// a hand-over) reconnects with its exact byte offset and is served by a new mirror, which
// holds it until its copy of the stream reaches that byte: the spectator's copy is the
// archive, byte for byte. (The mirror sent the stream again from the Start record, or
// from a point before the offset.)
func TestASpectatorResumingOnAFreshMirrorGetsNoByteTwice(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 2)
	a := c.node("relay-1")
	m := ownedBy(c, a, relay.CreateRequest{Players: 2, MaxDurationSeconds: 4})
	id := uuid.MustParse(m.MatchID)
	sp := c.watch(a.url, m.SpectatorToken) // served locally by the owner
	p1 := c.play(a.url, m.PlayerTokens[0], 1)
	p2 := c.play(a.url, m.PlayerTokens[1], 2)
	require.Eventually(t, func() bool { tick, ok := p1.sess.LastTick(); return ok && tick >= 60 }, 20*time.Second, time.Millisecond)

	// relay-2 takes the match (as after relay-1's lease lapsed): relay-1's next write is
	// fenced, it abandons the match, its spectator reconnects to relay-1 -> mirror.
	c.node("relay-2").node.ClaimNow(id)
	waitAll(t, []*player{p1, p2})
	waitWatcher(t, sp)
	archive := c.node("relay-2").archive(t, m.MatchID)
	got := sp.bytes()
	t.Logf("spectator %d bytes, archive %d bytes, reconnects %d", len(got), len(archive), sp.sess.Reconnects())
	k := 0
	for k < len(got) && k < len(archive) && got[k] == archive[k] {
		k++
	}
	t.Logf("common prefix %d bytes; rest of the copy found in the archive at %d; copy ends with the archive's tail: %v",
		k, bytes.Index(archive, got[k:min(len(got), k+64)]), bytes.HasSuffix(got, archive[k:]))
	assert.True(t, bytes.Equal(archive, got), "the spectator's copy differs from the archive (%d vs %d bytes)", len(got), len(archive))
}

// A node heartbeats while it claims a failed node's matches (here one claim that takes
// 3 s, more than the lease; in production many claims, or long streams to copy). (The
// claims ran on the heartbeat's goroutine: the other survivor saw the claimer's lease
// lapse and took over the healthy match it ran, and the one it was claiming.)
func TestLongClaimsDoNotStopTheClaimersHeartbeat(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	a := c.node("relay-1")
	var x *relay.CreateResponse
	for x == nil { // relay-2 is the preferred claimer of x once relay-1 is gone
		m := ownedBy(c, a, relay.CreateRequest{Players: 2, MaxDurationSeconds: 60})
		id := uuid.MustParse(m.MatchID)
		h := fnv.New32a()
		h.Write(id[:])
		if h.Sum32()%2 == 0 {
			x = m
		}
	}
	healthy := map[string]*relay.CreateResponse{}
	for _, n := range []string{"relay-2", "relay-3"} {
		m := ownedBy(c, c.node(n), relay.CreateRequest{Players: 2, MaxDurationSeconds: 60})
		healthy[n] = m
		p := c.play(c.node(n).url, m.PlayerTokens[0], 1)
		c.play(c.node(n).url, m.PlayerTokens[1], 2)
		require.Eventually(t, func() bool { tick, ok := p.sess.LastTick(); return ok && tick >= 30 }, 20*time.Second, time.Millisecond)
	}
	c.node("relay-2").node.SlowClaims(3 * time.Second)
	a.kill()
	deadline := time.Now().Add(4 * testLease)
	for time.Now().Before(deadline) {
		for n, m := range healthy {
			if r := c.running(m.MatchID); r != "" && r != n {
				t.Errorf("the healthy match on %s moved to %s: %s's heartbeat stopped while it claimed", n, r, n)
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := c.node("relay-2").node.Locate(uuid.MustParse(x.MatchID))
	require.NoError(t, err)
	t.Logf("the failed node's match: running on %q, directory %+v", c.running(x.MatchID), r)
}
