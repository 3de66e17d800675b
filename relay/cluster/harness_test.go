package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/relay/cluster"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

const (
	testSecret = "0123456789abcdef0123456789abcdef"
	testKey    = "test-admin-key"
	// testRate runs cluster test matches at twice the default clock.
	testRate = 60
	// testHeartbeat and testLease: a failover within about 2 s, with room for a
	// machine loaded by the race detector and the other packages' tests.
	testHeartbeat = 250 * time.Millisecond
	testLease     = 2 * time.Second
)

// testCluster is three relay nodes on an embedded three-node NATS cluster, on loopback.
type testCluster struct {
	t     *testing.T
	nats  []*cluster.Embedded
	urls  string // NATS servers of the cluster's own (standalone processes), else nats's
	nodes []*testNode
	opts  []nodeOption
	// nodeOpts changes the nodes' cluster options (the tests' short heartbeat and lease
	// by default).
	nodeOpts func(*cluster.Options)
}

// nodeOption changes the relay options of the node named name.
type nodeOption func(name string, o *relay.Options)

// testNode is one relay node: its server, its cluster node, its NATS connection and its
// HTTP server (whose connections it can cut at once, as a crash would).
type testNode struct {
	name  string
	srv   *relay.Server
	node  *cluster.Node
	nc    *nats.Conn
	http  *http.Server
	base  string // http://host:port
	url   string // ws://host:port/v1/ws
	dir   string // replay directory
	mu    sync.Mutex
	conns map[net.Conn]bool
	dead  bool
	// stopped: stop ran (a node that left is not stopped again at cleanup)
	stopped bool
}

func newTestCluster(t *testing.T, relays int, opts ...nodeOption) *testCluster {
	t.Helper()
	servers, err := cluster.StartEmbeddedCluster(3, t.TempDir())
	require.NoError(t, err)
	c := &testCluster{t: t, nats: servers, opts: opts}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.stop(t)
		}
		for _, s := range c.nats {
			s.Stop()
		}
	})
	c.start(relays)
	return c
}

// start starts relays relay nodes and waits until each sees every other's heartbeat.
func (c *testCluster) start(relays int) {
	t := c.t
	for i := range relays {
		c.nodes = append(c.nodes, c.startNode(fmt.Sprintf("relay-%d", i+1)))
	}
	// Every node sees every other's heartbeat before the test places matches.
	require.Eventually(t, func() bool {
		for _, n := range c.nodes {
			alive := 0
			for _, s := range n.node.Nodes() {
				if s.Alive {
					alive++
				}
			}
			if alive != relays {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond)
}

func (c *testCluster) startNode(name string) *testNode {
	t := c.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	n := &testNode{name: name, base: "http://" + ln.Addr().String(), url: "ws://" + ln.Addr().String() + "/v1/ws",
		dir: t.TempDir(), conns: map[net.Conn]bool{}}
	urls := c.urls
	if urls == "" {
		urls = cluster.ClientURLs(c.nats)
	}
	n.nc, err = cluster.Connect(urls, name, cluster.ConnectOptions{})
	require.NoError(t, err)
	// What the nodes did, shown when a test fails.
	log := zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)).With(zap.String("node", name))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	co := cluster.Options{Name: name, URL: n.url, Replicas: 3, Heartbeat: testHeartbeat, LeaseTTL: testLease, PublishTimeout: 5 * time.Second}
	if c.nodeOpts != nil {
		c.nodeOpts(&co)
	}
	n.node, err = cluster.NewNode(ctx, n.nc, co, log)
	require.NoError(t, err)
	o := relay.Options{Cluster: n.node, TokenSecret: []byte(testSecret), AdminKey: testKey,
		ReplayDir: n.dir, PublicURL: n.url, IdleFlush: relay.ClusterIdleFlush, Match: relay.MatchOptions{TickRate: testRate}}
	for _, opt := range c.opts {
		opt(name, &o)
	}
	n.srv, err = relay.New(o, log)
	require.NoError(t, err)
	require.NoError(t, n.node.Start(n.srv))
	n.http = &http.Server{Handler: n.node.Handler(), ConnState: func(conn net.Conn, st http.ConnState) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if st == http.StateNew {
			n.conns[conn] = true
		}
	}}
	go func() { _ = n.http.Serve(ln) }()
	return n
}

// kill makes the node vanish as a crashed process would: its NATS connection, listener
// and every connection close at once, with no end record, no goodbye. (Its match actors,
// cut off, stop by themselves; the test's cleanup stops what is left.)
func (n *testNode) kill() {
	n.nc.Close()
	_ = n.http.Close()
	n.mu.Lock()
	for conn := range n.conns {
		_ = conn.Close()
	}
	n.dead = true
	n.mu.Unlock()
}

// leave stops the node as serve does on SIGTERM: its matches handed over to the other
// nodes, then a clean shutdown.
func (n *testNode) leave(t *testing.T) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	given, err := n.node.HandOver(ctx)
	require.NoError(t, err)
	n.stop(t)
	n.mu.Lock()
	n.dead = true
	n.mu.Unlock()
	return given
}

func (n *testNode) stop(t *testing.T) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.stopped = true
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = n.srv.Shutdown(ctx)
	n.node.Stop()
	_ = n.http.Close()
	n.nc.Close()
}

// api calls the match API on the node and decodes the JSON answer into out.
func (n *testNode) api(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var in []byte
	if body != nil {
		var err error
		in, err = json.Marshal(body)
		require.NoError(t, err)
	}
	status, b := n.call(t, method, path, in)
	if out != nil && status < 300 {
		require.NoError(t, json.Unmarshal(b, out), "%s", b)
	}
	return status
}

// call sends an API request with the admin key and returns the status and body.
func (n *testNode) call(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, n.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func (c *testCluster) live() []*testNode {
	var out []*testNode
	for _, n := range c.nodes {
		n.mu.Lock()
		if !n.dead {
			out = append(out, n)
		}
		n.mu.Unlock()
	}
	return out
}

// any is a random live node.
func (c *testCluster) any() *testNode {
	l := c.live()
	return l[rand.IntN(len(l))]
}

// other is a random live node other than the one named.
func (c *testCluster) other(name string) *testNode {
	for {
		if n := c.any(); n.name != name {
			return n
		}
	}
}

func (c *testCluster) node(name string) *testNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %s", name)
	return nil
}

// create makes a match through a random node.
func (c *testCluster) create(req relay.CreateRequest) *relay.CreateResponse {
	c.t.Helper()
	return c.createOn(c.any(), req)
}

// createOn makes a match through node n (which places it on the least loaded node).
func (c *testCluster) createOn(n *testNode, req relay.CreateRequest) *relay.CreateResponse {
	c.t.Helper()
	if req.Sim == "" {
		req.Sim = skirmish.Name
	}
	if req.SeedOpt == nil {
		seed := uint64(11)
		req.SeedOpt = &seed
	}
	var resp relay.CreateResponse
	code := n.api(c.t, "POST", "/v1/matches", req, &resp)
	// A node behind its clock (a busy test machine) refuses new matches for a moment
	// (503, Retry-After: 1), as the API says; a backend retries, and so does this.
	for deadline := time.Now().Add(10 * time.Second); code == http.StatusServiceUnavailable && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		code = n.api(c.t, "POST", "/v1/matches", req, &resp)
	}
	require.Equal(c.t, http.StatusCreated, code)
	return &resp
}

// running is the live node whose relay runs match id, asked directly (not through the
// API, whose list waits for a node that just died).
func (c *testCluster) running(id string) string {
	for _, n := range c.live() {
		if info, ok := n.srv.Match(uuid.MustParse(id)); ok && info.State != "ended" {
			return n.name
		}
	}
	return ""
}

// owner is the node running match id, from the cluster-wide list on a random node.
func (c *testCluster) owner(id string) string {
	var list []cluster.NodeMatch
	require.Equal(c.t, http.StatusOK, c.any().api(c.t, "GET", "/v1/matches", nil, &list))
	for _, m := range list {
		if m.ID == id && m.State != "ended" {
			return m.Node
		}
	}
	return ""
}

// player is a skirmish bot playing through a node.
type player struct {
	sess *client.Session
	bot  *skirmish.Bot
	out  [][]byte
	// attempts is the most dial attempts one of its reconnects took (1: the first
	// attempt joined, with no refusal to back off from).
	attempts atomic.Int32
}

func (c *testCluster) play(url, token string, slot uint32) *player {
	c.t.Helper()
	p := &player{bot: skirmish.NewBot(slot, 99)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := client.Dial(ctx, url, token, &client.Options{ReconnectMax: 500 * time.Millisecond, OnReconnect: func(_ *client.Session, attempt int) {
		if int32(attempt) > p.attempts.Load() {
			p.attempts.Store(int32(attempt))
		}
	}, OnTick: func(s *client.Session, f lockstep.Frame) {
		if !s.Live() {
			return
		}
		p.out = p.bot.Act(f.Tick, s.Sim().(*skirmish.Game), p.out[:0])
		for _, payload := range p.out {
			_, _, _ = s.Send(payload)
		}
	}})
	require.NoError(c.t, err)
	c.t.Cleanup(func() { sess.Close() })
	p.sess = sess
	return p
}

// playAll joins every player of each match through a node that does not run it (which
// redirects them).
func (c *testCluster) playAll(matches []*relay.CreateResponse, owners map[string]string) [][]*player {
	var players [][]*player
	for _, m := range matches {
		var ps []*player
		for i, tok := range m.PlayerTokens {
			ps = append(ps, c.play(c.other(owners[m.MatchID]).url, tok, uint32(i+1)))
		}
		players = append(players, ps)
	}
	return players
}

// watcher is a spectator that keeps every stream record, as a saved replay file.
type watcher struct {
	sess *client.Session
	mu   sync.Mutex
	recv bytes.Buffer
}

func (c *testCluster) watch(url, token string, onTick ...func(*client.Session, lockstep.Frame)) *watcher {
	c.t.Helper()
	w := &watcher{}
	w.recv.Write(replay.AppendHeader(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := &client.Options{ReconnectMax: 500 * time.Millisecond, OnStream: func(_ *client.Session, rec []byte) {
		w.mu.Lock()
		w.recv.Write(rec)
		w.mu.Unlock()
	}}
	if len(onTick) > 0 {
		o.OnTick = onTick[0]
	}
	sess, err := client.Dial(ctx, url, token, o)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { sess.Close() })
	w.sess = sess
	return w
}

func (w *watcher) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.recv.Bytes())
}

// archive fetches a match's replay from a node's API (from JetStream).
func (n *testNode) archive(t *testing.T, id string) []byte {
	t.Helper()
	status, b := n.call(t, "GET", "/v1/matches/"+id+"/replay", nil)
	require.Equal(t, http.StatusOK, status, "%s", b)
	return b
}

// file reads a match's replay file on the node that ran it.
func (n *testNode) file(t *testing.T, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, id+".tkr"))
	require.NoError(t, err)
	return b
}

// waitWatcher waits for a spectator's stream to end: a minute at most, so a stream that
// never ends fails the test rather than the package's timeout.
func waitWatcher(t *testing.T, w *watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err := w.sess.Wait(ctx)
	require.NoError(t, err, "the spectator")
}

func waitAll(t *testing.T, players []*player) {
	t.Helper()
	for i, p := range players {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		end, err := p.sess.Wait(ctx)
		cancel()
		require.NoError(t, err, "player %d", i)
		require.NotNil(t, end, "player %d", i)
	}
}
