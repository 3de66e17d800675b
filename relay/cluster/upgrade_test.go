//go:build unix

package cluster_test

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/balancer"
	"github.com/tickrelay/tickrelay/internal/testkit/natsprocs"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/relay/cluster"
	"github.com/tickrelay/tickrelay/replay"
)

// An upgrade, as an operator does it every week: each nats-server in turn told to go
// (lame duck: it hands its JetStream leaderships over and closes its clients one by one),
// started again on its store, and the next only once every stream has its replicas back
// — the order NATS documents for upgrades — while matches play on three relay nodes.
// What a player must not feel: no reconnect, no frame later than the bound, no desync;
// every replay and the archive verify.
//
// `make cluster-upgrade-drill` runs it (20 matches) RUNS times; with -upgrade-short, a
// short form (2 matches of 4 players, a looser bound for a loaded machine). `make test`
// runs neither: e2e's multi-process drill does both rolling restarts there, and this
// package's serial tests are near their time budget.

var upgradeShort = flag.Bool("upgrade-short", false, "the upgrade drills' short form (2 or 3 matches, looser bounds)")

// upgradeForm says which form of an upgrade drill to run, or skips the test.
func upgradeForm(t *testing.T) (full bool) {
	t.Helper()
	if !*upgradeFull && !*upgradeShort {
		t.Skip("an upgrade drill: make cluster-upgrade-drill (-upgrade-full), or -upgrade-short; make test has e2e's multi-process drill")
	}
	return *upgradeFull
}

var upgradeFull = flag.Bool("upgrade-full", false, "TestARollingRestartOfTheNATSServersCostsPlayersNothing: 20 matches of 4 players at the published bound (make cluster-upgrade-drill)")

// The longest a player's frames may stall while the NATS servers restart one by one: the
// published bound, and twice it for the short form on a CI machine running other tests.
const (
	upgradeStallBound      = 500 * time.Millisecond
	upgradeShortStallBound = 2 * upgradeStallBound
)

func TestARollingRestartOfTheNATSServersCostsPlayersNothing(t *testing.T) {
	matches, bound := 2, upgradeShortStallBound
	if upgradeForm(t) {
		matches, bound = 20, upgradeStallBound
	}
	ps := natsprocs.Start(t, natsCommand(os.Getenv("TICKRELAY_NATS_SERVER")))
	c := &testCluster{t: t, urls: natsprocs.URLs(ps), nodeOpts: func(o *cluster.Options) {
		o.Heartbeat, o.LeaseTTL, o.PublishTimeout = 0, 0, 0 // the defaults
	}}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.stop(t)
		}
	})
	c.start(3)
	l := startLoad(t, c, matches, func(i, j int) string { return c.node(fmt.Sprintf("relay-%d", 1+(i+j+3)%3)).url })
	from := time.Now()
	for _, p := range ps {
		t0 := time.Now()
		p.LameDuck(t)
		gone := time.Since(t0)
		p.Start(t)
		natsprocs.WaitReplicas(t, c.node("relay-1").nc, p.Name)
		t.Logf("%s: lame duck and exit %v, back with every replica current after %v", p.Name, gone.Round(100*time.Millisecond), time.Since(t0).Round(100*time.Millisecond))
	}
	drill := time.Since(from)
	stalls, reconnects := l.end(t, c.node("relay-1"))
	worst, p99 := stalls[len(stalls)-1], stalls[min(len(stalls)-1, len(stalls)*99/100)]
	t.Logf("rolling restart of 3 nats-servers in %v under %d matches of 4 players: longest frame gap p99 %v, max %v; players' reconnects %v; spectator's %d",
		drill.Round(100*time.Millisecond), matches, p99.Round(time.Millisecond), worst.Round(time.Millisecond), reconnects, l.sp.sess.Reconnects())
	assert.Less(t, worst, bound, "a player's frames stalled longer than the bound")
	assert.Equal(t, make([]int, len(l.players)), reconnects, "no player reconnects")
	assert.Zero(t, l.sp.sess.Reconnects(), "the spectator does not reconnect")
	l.verify(t, c.node("relay-2"))
}

// The relay nodes' turn: a fresh node started, then an old one told to stop (SIGTERM: it
// hands its matches over), the next only once the last one's matches run elsewhere. Players and the spectator reach the cluster through one address that
// outlives every node (a load balancer in production; internal/testkit/balancer here), so a player whose
// node leaves reconnects and is sent to the match's new node. What a player feels: one
// gap per hand-over of its match, p99 under 1 s and none over 2 s (twice that in the short
// form on a loaded CI machine); no desync; every archive verifies.
func TestARollingRestartOfTheRelayNodesKeepsEveryMatchPlaying(t *testing.T) {
	matches, p99Bound, maxBound := 3, 2*time.Second, 4*time.Second
	if upgradeForm(t) {
		matches, p99Bound, maxBound = 20, time.Second, 2*time.Second
	}
	c := newTestCluster(t, 3)
	lb := balancer.Start(t, addrs(c.live())...)
	url := "ws://" + lb.Addr + "/v1/ws"
	l := startLoad(t, c, matches, func(int, int) string { return url })
	from := time.Now()
	for i := range 3 {
		old := c.node(fmt.Sprintf("relay-%d", i+1))
		// The new version first (a rolling update's surge): the leaving node hands its
		// matches to the least loaded node, the new one, so each match moves once; with
		// the new node started after, a match may land on a node that leaves next.
		c.nodes = append(c.nodes, c.startNode(fmt.Sprintf("relay-%d", i+4)))
		t0 := time.Now()
		lb.Set(addrs(slices.DeleteFunc(c.live(), func(n *testNode) bool { return n == old }))...) // drained first, as a balancer is told
		given := old.leave(t)
		require.Eventually(t, func() bool {
			for _, m := range l.ms {
				if c.running(m.MatchID) == "" {
					return false
				}
			}
			return true
		}, 20*time.Second, 10*time.Millisecond, "%s's matches run elsewhere", old.name)
		t.Logf("%s left (%d matches handed over, all running again after %v); relay-%d had taken its place", old.name, given, time.Since(t0).Round(time.Millisecond), i+4)
	}
	drill := time.Since(from)
	gaps, reconnects := l.end(t, c.any())
	worst, p99 := gaps[len(gaps)-1], gaps[min(len(gaps)-1, len(gaps)*99/100)]
	t.Logf("rolling restart of 3 relay nodes in %v under %d matches of 4 players: longest frame gap p50 %v, p99 %v, max %v; players' reconnects %v; spectator's %d (gap %v)",
		drill.Round(100*time.Millisecond), matches, gaps[len(gaps)/2].Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond), reconnects, l.sp.sess.Reconnects(), l.sp.sess.LongestGap().Round(time.Millisecond))
	assert.Less(t, p99, p99Bound, "p99 of the players' longest gaps")
	assert.Less(t, worst, maxBound, "a player's longest gap")
	l.verify(t, c.any())
}

// drillLoad is a drill's live matches: 4 players each and a spectator of the first, each
// player's longest gap between two ticks measured from the drill's start.
type drillLoad struct {
	ms      []*relay.CreateResponse
	players []*player
	tickers []*ticker
	sp      *watcher
	stop    chan struct{}
}

// startLoad places matches round the first three nodes, joins their players (and the
// spectator) through url(i, j), and waits until they play; the gaps count from its return.
func startLoad(t *testing.T, c *testCluster, matches int, url func(match, slot int) string) *drillLoad {
	t.Helper()
	l := &drillLoad{stop: make(chan struct{})}
	t.Cleanup(func() { close(l.stop) })
	for i := range matches {
		// Placed by the cluster (the least loaded node): spread over the three.
		m := c.createOn(c.node(fmt.Sprintf("relay-%d", 1+i%3)), relay.CreateRequest{Players: 4, MaxDurationSeconds: 600}) // ended after the drill
		l.ms = append(l.ms, m)
		for j, tok := range m.PlayerTokens {
			p := c.play(url(i, j), tok, uint32(j+1))
			k := &ticker{}
			go k.run(p, l.stop)
			l.players, l.tickers = append(l.players, p), append(l.tickers, k)
		}
	}
	l.sp = c.watch(url(0, -1), l.ms[0].SpectatorToken)
	require.Eventually(t, func() bool { tick, ok := l.players[len(l.players)-1].sess.LastTick(); return ok && tick >= 60 }, 30*time.Second, 10*time.Millisecond)
	from := time.Now()
	for _, k := range l.tickers {
		k.mu.Lock()
		k.after = from
		k.mu.Unlock()
	}
	return l
}

// end lets the matches play a second more, ends them through node n (DELETE), waits for
// every player and the spectator, and returns each player's longest gap (sorted) and
// reconnects.
func (l *drillLoad) end(t *testing.T, n *testNode) (gaps []time.Duration, reconnects []int) {
	t.Helper()
	time.Sleep(time.Second)
	for _, m := range l.ms {
		require.Equal(t, http.StatusOK, n.api(t, "DELETE", "/v1/matches/"+m.MatchID, nil, nil))
	}
	waitAll(t, l.players)
	waitWatcher(t, l.sp)
	for i, p := range l.players {
		l.tickers[i].mu.Lock()
		gaps = append(gaps, l.tickers[i].worst)
		l.tickers[i].mu.Unlock()
		reconnects = append(reconnects, p.sess.Reconnects())
	}
	slices.Sort(gaps)
	return gaps, reconnects
}

// verify holds every match's archive (read through node n) to no desync and a replay
// that verifies, and the spectator's copy to the first one's bytes.
func (l *drillLoad) verify(t *testing.T, n *testNode) {
	t.Helper()
	for i, m := range l.ms {
		archive := n.archive(t, m.MatchID)
		if i == 0 {
			assert.True(t, bytes.Equal(archive, l.sp.bytes()), "the spectator's copy is the archive (%d vs %d bytes)", len(l.sp.bytes()), len(archive))
		}
		rp, err := replay.Load(bytes.NewReader(archive))
		require.NoError(t, err)
		assert.Empty(t, rp.Desyncs, "match %d: no desync", i)
		_, err = replay.Verify(rp, replay.VerifyOptions{})
		assert.NoError(t, err, "match %d's archive verifies", i)
	}
}

// addrs is the nodes' listen addresses, a balancer's targets.
func addrs(nodes []*testNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, strings.TrimPrefix(n.base, "http://"))
	}
	return out
}
