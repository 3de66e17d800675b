// The directory: the KV bucket that maps each match to its owning node and holds every
// node's heartbeat (its lease) and load.

package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
)

// MatchEntry is a match's directory value. Its owner writes it: at creation, when it
// claims the match of a dead node (compare-and-set on the revision), and at the end.
type MatchEntry struct {
	// Node owns the match (runs its actor); URL is its public WebSocket URL.
	Node string `json:"node"`
	URL  string `json:"url"`
	// Ended: the match ended (its stream, if any, has its end record).
	Ended bool `json:"ended,omitempty"`
	// TickRate and SpectatorDelayMS let any node serve the match's spectators.
	TickRate         int   `json:"tick_rate"`
	SpectatorDelayMS int64 `json:"spectator_delay_ms,omitempty"`
	// Created is when the match was created (information only).
	Created time.Time `json:"created"`
	// Hooks: the match's webhooks are not all delivered yet. The owner delivers them;
	// when it dies after the match ended, another node claims the entry as it claims a
	// running match, and delivers the rest from the stream (claimHooks).
	Hooks bool `json:"hooks,omitempty"`
}

// NodeEntry is a node's heartbeat: rewritten every Options.Heartbeat, it is the node's
// lease, and its load places new matches.
type NodeEntry struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Matches in lobby or running, and connected players and spectators.
	Matches     int `json:"matches"`
	Connections int `json:"connections"`
	// Leaving: the node is handing its matches over before it stops. Its matches are
	// about to move: a join is held where it landed instead of being sent to it
	// (Locate), and no match is placed or handed over to it (leastLoaded).
	Leaving bool `json:"leaving,omitempty"`
	// Started is when the node joined the cluster (its own clock): of two nodes equally
	// loaded, a match goes to the one started last (leastLoaded).
	Started time.Time `json:"started"`
	// Updated is the writer's clock (information only: leases are judged on the
	// observer's clock, by when the key last changed).
	Updated time.Time `json:"updated"`
}

// seen is a directory value and when this node saw its key change, on its own clock.
type seen[T any] struct {
	v        T
	revision uint64
	at       time.Time
}

// directory is what this node's watcher of the bucket saw (its view). Guarded by Node.mu.
type directory struct {
	matches map[uuid.UUID]*seen[MatchEntry]
	nodes   map[string]*seen[NodeEntry]
}

// keepView applies the bucket's changes to the directory view until the node stops. A
// watcher that ends before (the NATS client gives up on its consumer when recreating it
// fails, as it may while a NATS server is lost) is replaced (newViewWatcher): the new one
// replays every key's last value, so the view catches up: a key deleted in between
// replays as its delete marker (the bucket keeps one value per key, and a delete is one).
func (n *Node) keepView(w jetstream.KeyWatcher) {
	for w != nil {
		n.followView(w)
		w = n.newViewWatcher()
	}
}

// newViewWatcher makes a new watcher of the directory a heartbeat after the last one ended,
// trying again each heartbeat; nil when the node stops or its NATS connection is closed
// for good (the node is cut off).
func (n *Node) newViewWatcher() jetstream.KeyWatcher {
	for {
		select {
		case <-n.ctx.Done():
			return nil
		case <-time.After(n.opts.Heartbeat):
		}
		w, err := n.kv.WatchAll(n.ctx)
		switch {
		case errors.Is(err, nats.ErrConnectionClosed):
			n.log.Warn("the NATS connection is closed; the directory view stops", zap.Error(err))
			return nil
		case err != nil:
			n.log.Warn("watching the directory again failed; retrying", zap.Error(err))
		default:
			return w
		}
	}
}

// followView applies what watcher w brings until it ends, it is frozen (it did not bring the
// node's own heartbeat within two heartbeats: its consumer stalled on a lost NATS server
// without ending), or the node stops.
func (n *Node) followView(w jetstream.KeyWatcher) {
	defer func() { _ = w.Stop() }()
	check := time.NewTicker(n.opts.Heartbeat)
	defer check.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-check.C:
			n.mu.Lock()
			frozen := n.frozen(time.Now())
			n.mu.Unlock()
			if frozen {
				n.met.watchRestarts.Inc()
				n.log.Warn("the directory's watcher missed this node's own heartbeat: it is frozen; watching it again")
				return
			}
		case e, ok := <-w.Updates():
			if !ok {
				if n.ctx.Err() == nil {
					n.log.Warn("the directory's watcher ended; watching the directory again")
				}
				return
			}
			if e != nil {
				n.apply(e)
			}
		}
	}
}

func (n *Node) apply(e jetstream.KeyValueEntry) {
	now := time.Now()
	del := e.Operation() != jetstream.KeyValuePut
	n.mu.Lock()
	defer n.mu.Unlock()
	switch k := e.Key(); {
	case strings.HasPrefix(k, nodeKeyPrefix):
		name := strings.TrimPrefix(k, nodeKeyPrefix)
		if old := n.dir.nodes[name]; old != nil && old.revision == e.Revision() {
			return // seen (a new watcher's replay): not a heartbeat, its lease runs on
		}
		if del {
			delete(n.dir.nodes, name)
			return
		}
		var v NodeEntry
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			n.log.Warn("a bad node entry in the directory", zap.String("key", k), zap.Error(err))
			return
		}
		n.dir.nodes[name] = &seen[NodeEntry]{v: v, revision: e.Revision(), at: now}
	case strings.HasPrefix(k, matchKeyPrefix):
		id, err := uuid.Parse(strings.TrimPrefix(k, matchKeyPrefix))
		if err != nil {
			return
		}
		if del {
			delete(n.dir.matches, id)
			return
		}
		var v MatchEntry
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			n.log.Warn("a bad match entry in the directory", zap.String("key", k), zap.Error(err))
			return
		}
		if n.handedHere(n.dir.matches[id], v) {
			n.wakeSweep() // resume it now, not at the next sweep
		}
		n.dir.matches[id] = &seen[MatchEntry]{v: v, revision: e.Revision(), at: now}
	}
}

// handedHere reports whether a match entry's change from old to v is a leaving node
// handing the match to this one. Only that: a claim of this node's own also makes the
// entry this node's, and a sweep woken by it could run in the moment between a failed
// claim giving the match back and the view seeing it given back, and claim it again.
func (n *Node) handedHere(old *seen[MatchEntry], v MatchEntry) bool {
	if old == nil || old.v.Node == n.opts.Name || v.Node != n.opts.Name || v.Ended {
		return false
	}
	from := n.dir.nodes[old.v.Node] // its Leaving heartbeat came before the entry's change
	return from != nil && from.v.Leaving
}

// alive reports whether node name's lease holds: its heartbeat key changed within the
// lease TTL, on this node's clock. For its own lease a node trusts its last heartbeat
// JetStream took as much as its view, which a frozen watcher may hold back: a node whose
// writes land is alive to the others. Called with n.mu held.
func (n *Node) alive(name string, now time.Time) bool {
	if name == n.opts.Name && !n.ownBeat.IsZero() && now.Sub(n.ownBeat) < n.opts.LeaseTTL {
		return true
	}
	if name != n.opts.Name && (n.beatFailed || (!n.beatBack.IsZero() && now.Sub(n.beatBack) < n.opts.LeaseTTL)) {
		// The directory is away (this node's own last heartbeat failed), or came back
		// less than a lease ago: the others' heartbeats fail as this node's do, so a lease
		// that runs out meanwhile says nothing of them. They have a whole lease from the
		// directory's return (chaos runs: nodes claimed each other's matches after the
		// directory's leader was killed).
		return true
	}
	s := n.dir.nodes[name]
	return s != nil && now.Sub(s.at) < n.opts.LeaseTTL
}

// frozen reports whether the directory view missed this node's own heartbeat: one
// JetStream took more than two heartbeats ago has not come through the watcher. Called
// with n.mu held.
func (n *Node) frozen(now time.Time) bool {
	if n.ownBeatRev == 0 || now.Sub(n.ownBeat) < 2*n.opts.Heartbeat {
		return false
	}
	s := n.dir.nodes[n.opts.Name]
	return s == nil || s.revision < n.ownBeatRev
}

// heartbeat writes this node's entry: its lease and its load.
func (n *Node) heartbeat(ctx context.Context) error {
	// One at a time (the loop's and HandOver's): a beat built before HandOver set
	// leaving must not land after HandOver's own and say the node stays.
	n.beatMu.Lock()
	defer n.beatMu.Unlock()
	e := NodeEntry{Name: n.opts.Name, URL: n.opts.URL, Leaving: n.leaving.Load(), Started: n.started, Updated: time.Now().UTC()}
	for _, m := range n.srv.Matches() {
		if m.State != relay.StateEnded.String() {
			e.Matches++
			e.Connections += m.Connected + m.Spectators
		}
	}
	b, _ := json.Marshal(e)
	// A slow write still renews the lease if it lands within it.
	ctx, cancel := context.WithTimeout(ctx, n.opts.LeaseTTL/2)
	defer cancel()
	rev, err := n.kv.Put(ctx, nodeKey(n.opts.Name), b)
	n.mu.Lock()
	if err == nil {
		n.ownBeat, n.ownBeatRev = time.Now(), rev
		if n.beatFailed {
			n.beatBack = n.ownBeat
		}
	}
	n.beatFailed = err != nil
	n.mu.Unlock()
	return err
}

// Nodes returns the nodes in the directory, live ones first, each by name.
func (n *Node) Nodes() []NodeStatus {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]NodeStatus, 0, len(n.dir.nodes))
	for _, s := range n.dir.nodes {
		out = append(out, NodeStatus{NodeEntry: s.v, Alive: n.alive(s.v.Name, now), Self: s.v.Name == n.opts.Name,
			LastSeenMS: now.Sub(s.at).Milliseconds()})
	}
	slices.SortFunc(out, func(a, b NodeStatus) int {
		if a.Alive != b.Alive {
			if a.Alive {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// NodeStatus is a node as GET /v1/nodes shows it.
type NodeStatus struct {
	NodeEntry
	// Alive: its lease holds. Self: it is the node answering.
	Alive bool `json:"alive"`
	Self  bool `json:"self,omitempty"`
	// LastSeenMS is how long ago this node saw its heartbeat change.
	LastSeenMS int64 `json:"last_seen_ms"`
}

// place picks the node a new match goes to: the live node that owns the fewest matches
// not ended in the directory (leastLoaded). The directory, not the heartbeats: an owner
// writes a match's entry before it answers the create, and the placing node notes it at
// once (pending), so creates one after another spread even between two heartbeats.
func (n *Node) place() (NodeEntry, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leastLoaded(n.loads(), "")
}

// loads counts the matches not ended that each node owns, with those placed and not yet
// seen in the view. Called with n.mu held.
func (n *Node) loads() map[string]int {
	load := map[string]int{}
	for _, s := range n.dir.matches {
		if !s.v.Ended {
			load[s.v.Node]++
		}
	}
	for id, node := range n.pending {
		if n.dir.matches[id] != nil {
			delete(n.pending, id) // the view brought it: counted above
			continue
		}
		load[node]++
	}
	return load
}

// leastLoaded is the live node other than except with the least load; of equally loaded
// ones, the one started last (in a rolling restart it is a new one, not one about to
// leave: a match handed to an old node moves again when that one leaves), then by name.
// Called with n.mu held.
func (n *Node) leastLoaded(load map[string]int, except string) (NodeEntry, error) {
	now := time.Now()
	var best *NodeEntry
	for name, s := range n.dir.nodes {
		if name == except || !n.alive(name, now) || s.v.Leaving {
			continue
		}
		if best == nil || load[name] < load[best.Name] || (load[name] == load[best.Name] && newer(s.v, *best)) {
			v := s.v
			best = &v
		}
	}
	if best == nil {
		return NodeEntry{}, ErrNoNodes
	}
	return *best, nil
}

// newer orders nodes for leastLoaded's ties: started later first, then by name.
func newer(a, b NodeEntry) bool {
	if !a.Started.Equal(b.Started) {
		return a.Started.After(b.Started)
	}
	return a.Name < b.Name
}

// placed counts a match just created on node until the view brings its entry.
func (n *Node) placed(id uuid.UUID, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dir.matches[id] == nil {
		n.pending[id] = node
	}
}

// entry returns match id's directory entry: from the view, or the bucket if the view
// has not seen it yet.
func (n *Node) entry(ctx context.Context, id uuid.UUID) (*seen[MatchEntry], error) {
	n.mu.Lock()
	s := n.dir.matches[id]
	n.mu.Unlock()
	if s != nil {
		return s, nil
	}
	e, err := n.kv.Get(ctx, matchKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, relay.ErrNoMatch
	}
	if err != nil {
		return nil, err
	}
	var v MatchEntry
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return nil, fmt.Errorf("cluster: match entry %s: %w", id, err)
	}
	return &seen[MatchEntry]{v: v, revision: e.Revision(), at: time.Now()}, nil
}

// maxSpectatorDelayMS bounds a directory entry's spectator delay: a match's own bound.
const maxSpectatorDelayMS = int64(relay.MaxMatchDuration / time.Millisecond)

// Locate implements relay.Cluster: where a match this node does not run lives.
func (n *Node) Locate(id uuid.UUID) (relay.Remote, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := n.entry(ctx, id)
	if err != nil {
		return relay.Remote{}, err
	}
	if s.v.TickRate < 1 || s.v.TickRate > relay.MaxTickRate || s.v.SpectatorDelayMS < 0 || s.v.SpectatorDelayMS > maxSpectatorDelayMS {
		// No node writes such an entry; a mirror must not run on one (a tick rate too
		// high makes a zero batch interval).
		return relay.Remote{}, fmt.Errorf("cluster: match entry %s has tick rate %d and spectator delay %d ms, outside 1..%d and 0..%d",
			id, s.v.TickRate, s.v.SpectatorDelayMS, relay.MaxTickRate, maxSpectatorDelayMS)
	}
	r := relay.Remote{Ended: s.v.Ended, TickRate: s.v.TickRate, SpectatorDelay: time.Duration(s.v.SpectatorDelayMS) * time.Millisecond}
	n.mu.Lock()
	// A dead owner, a leaving one (its matches are being handed over), or this node
	// between claiming and running it: no URL, the match is moving.
	if o := n.dir.nodes[s.v.Node]; s.v.Node != n.opts.Name && n.alive(s.v.Node, time.Now()) && (o == nil || !o.v.Leaving) {
		r.URL = s.v.URL
	}
	n.mu.Unlock()
	return r, nil
}

// register writes a new match's entry, owned by this node.
func (n *Node) register(ctx context.Context, id uuid.UUID) error {
	o, ok := n.srv.MatchOptions(id)
	if !ok {
		return fmt.Errorf("cluster: match %s is not on this node", id)
	}
	e := MatchEntry{Node: n.opts.Name, URL: n.opts.URL, TickRate: o.TickRate,
		SpectatorDelayMS: o.SpectatorDelay.Milliseconds(), Created: time.Now().UTC(), Hooks: n.srv.HasWebhooks(id)}
	b, _ := json.Marshal(e)
	rev, err := n.kv.Create(ctx, matchKey(id), b)
	if err != nil {
		return fmt.Errorf("cluster: registering match %s: %w", id, err)
	}
	n.mu.Lock()
	if n.dir.matches[id] == nil {
		n.dir.matches[id] = &seen[MatchEntry]{v: e, revision: rev, at: time.Now()}
	}
	n.mu.Unlock()
	return nil
}

// update rewrites match id's entry with change applied, by compare-and-set on the
// revision seen (from the bucket when rev is 0); it fails if someone wrote it since.
func (n *Node) update(ctx context.Context, id uuid.UUID, rev uint64, change func(*MatchEntry)) (uint64, error) {
	e, err := n.kv.Get(ctx, matchKey(id))
	if err != nil {
		return 0, err
	}
	if rev != 0 && e.Revision() != rev {
		return 0, fmt.Errorf("cluster: match %s changed (revision %d, expected %d)", id, e.Revision(), rev)
	}
	var v MatchEntry
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return 0, err
	}
	change(&v)
	b, _ := json.Marshal(v)
	return n.casUpdate(ctx, n.kv, matchKey(id), b, e.Revision())
}

// casUpdate writes value to key if the key is still at revision rev (kv.Update). A
// refusal for a busy subject (subjectBusy: JetStream had the key's previous write still
// in process) while the key is still at rev stored nothing and says nothing of who
// wrote: it is tried again, as a stream copy is (publisher.Write), within ctx and
// PublishTimeout (a sweep's claim must not hold up the heartbeat that runs after it).
// Any other refusal, or a key that has moved on, is a real conflict.
func (n *Node) casUpdate(ctx context.Context, kv jetstream.KeyValue, key string, value []byte, rev uint64) (uint64, error) {
	if n.opts.PublishTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.opts.PublishTimeout)
		defer cancel()
	}
	r := n.retrier()
	for {
		next, err := kv.Update(ctx, key, value, rev)
		switch {
		case err == nil:
			return next, nil
		case r.busy != nil && ctx.Err() != nil:
			return 0, r.why(r.busy) // the time ran out after the key was busy
		case !subjectBusy(err):
			return 0, err
		}
		r.busy = err
		if e, gerr := kv.Get(ctx, key); gerr != nil {
			return 0, fmt.Errorf("%w (and reading the key back: %v)", err, gerr)
		} else if e.Revision() != rev {
			return 0, err
		}
		if !r.pause(ctx) {
			return 0, r.why(err)
		}
	}
}

// Ended implements relay.Cluster: an ended match's entry says so (a moved one belongs to
// its claimer now), and the heartbeat shows the load at once.
func (n *Node) Ended(id uuid.UUID, moved bool) {
	n.mu.Lock()
	delete(n.claimed, id)
	n.mu.Unlock()
	if moved {
		return
	}
	// Not on the actor's goroutine: the directory write may take a round trip.
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := n.update(ctx, id, 0, func(e *MatchEntry) {
			if e.Node == n.opts.Name {
				e.Ended = true
			}
		})
		if err != nil {
			n.log.Warn("marking an ended match in the directory", zap.String("match", id.String()), zap.Error(err))
		}
		if n.ctx.Err() == nil {
			_ = n.heartbeat(ctx)
		}
	}()
}
