package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

type fakeWatcher struct{ ch chan jetstream.KeyValueEntry }

func (w *fakeWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }
func (w *fakeWatcher) Stop() error                             { return nil }

// watchKV hands out a new watcher each WatchAll, on watchers, until closed.
type watchKV struct {
	jetstream.KeyValue
	watchers chan *fakeWatcher
	closed   atomic.Bool
}

func (kv *watchKV) WatchAll(context.Context, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if kv.closed.Load() {
		return nil, nats.ErrConnectionClosed
	}
	w := &fakeWatcher{ch: make(chan jetstream.KeyValueEntry, 8)}
	kv.watchers <- w
	return w, nil
}

// inView runs a check of n's directory view under its lock.
func inView(n *Node) func(func() bool) bool {
	return func(f func() bool) bool { n.mu.Lock(); defer n.mu.Unlock(); return f() }
}

func entry[T any](t *testing.T, key string, v T, rev uint64) entryAt {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return entryAt{key: key, val: b, rev: rev}
}

// The NATS client may give up on a key watcher's consumer while a NATS server is lost,
// and close its updates. The node then watches the directory again: the new watcher's
// replay brings what changed meanwhile, and a node's heartbeat it replays (the same
// revision) does not renew that node's lease. A connection closed for good ends it.
func TestADirectoryWatchThatEndsIsReplacedAndItsReplayRenewsNoLease(t *testing.T) {
	t.Parallel()
	kv := &watchKV{watchers: make(chan *fakeWatcher, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{opts: Options{Heartbeat: time.Millisecond}, log: zap.NewNop(), kv: kv, ctx: ctx,
		dir: directory{matches: map[uuid.UUID]*seen[MatchEntry]{}, nodes: map[string]*seen[NodeEntry]{}}}
	view := inView(n)

	first := &fakeWatcher{ch: make(chan jetstream.KeyValueEntry, 8)}
	done := make(chan struct{})
	go func() { defer close(done); n.keepView(first) }()
	a := entry(t, nodeKey("a"), NodeEntry{Name: "a"}, 1)
	first.ch <- a
	first.ch <- nil // the replay's end
	require.Eventually(t, func() bool { return view(func() bool { return n.dir.nodes["a"] != nil }) }, 5*time.Second, time.Millisecond)
	var at time.Time
	view(func() bool { at = n.dir.nodes["a"].at; return true })

	close(first.ch) // the client gave the watcher up
	var second *fakeWatcher
	select {
	case second = <-kv.watchers:
	case <-time.After(5 * time.Second):
		t.Fatal("the node did not watch the directory again")
	}
	id := uuid.New()
	second.ch <- a // replayed: the same revision
	second.ch <- entry(t, matchKey(id), MatchEntry{Node: "a"}, 2)
	second.ch <- nil
	second.ch <- entry(t, nodeKey("b"), NodeEntry{Name: "b"}, 3)
	require.Eventually(t, func() bool { return view(func() bool { return n.dir.nodes["b"] != nil }) }, 5*time.Second, time.Millisecond)
	view(func() bool {
		assert.Equal(t, at, n.dir.nodes["a"].at, "a replayed heartbeat is not a new one")
		assert.Equal(t, "a", n.dir.matches[id].v.Node, "what changed while no watcher ran")
		return true
	})

	// A connection closed for good (the node cut off) ends the watch: no retrying.
	kv.closed.Store(true)
	close(second.ch)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not stop when its connection closed")
	}
	cancel()
}

// A key deleted while no watcher ran: the bucket keeps its delete marker (its last
// value), and the new watcher's replay brings it, so the view forgets the key. Against a
// real NATS server: the new watcher relies on the client replaying markers.
func TestAKeyDeletedWhileNoWatcherRanLeavesTheView(t *testing.T) {
	t.Parallel()
	n, ctx, cancel := loneNode(t, "watcher")
	n.ctx = ctx
	view := inView(n)

	_, err := n.kv.Put(ctx, nodeKey("gone"), []byte(`{"name":"gone"}`))
	require.NoError(t, err)
	kept, err := n.kv.Put(ctx, nodeKey("kept"), []byte(`{"name":"kept"}`))
	require.NoError(t, err)
	first := &fakeWatcher{ch: make(chan jetstream.KeyValueEntry, 8)}
	done := make(chan struct{})
	go func() { defer close(done); n.keepView(first) }()
	for _, k := range []string{"gone", "kept"} {
		got, err := n.kv.Get(ctx, nodeKey(k))
		require.NoError(t, err)
		first.ch <- got
	}
	first.ch <- nil
	require.Eventually(t, func() bool { return view(func() bool { return len(n.dir.nodes) == 2 }) }, 5*time.Second, time.Millisecond)

	require.NoError(t, n.kv.Delete(ctx, nodeKey("gone")))
	close(first.ch) // the client gave the watcher up; the node watches again
	require.Eventually(t, func() bool { return view(func() bool { return n.dir.nodes["gone"] == nil }) }, 10*time.Second, time.Millisecond,
		"the new watcher's replay deletes the key")
	view(func() bool {
		require.NotNil(t, n.dir.nodes["kept"], "a key still there stays")
		assert.Equal(t, kept, n.dir.nodes["kept"].revision)
		return true
	})
	cancel()
	<-done
}

// A directory entry no node writes (a tick rate of 6e9, whose mirror batch interval
// would be zero and panic its ticker) is an error to Locate, never a mirror.
func TestLocateRefusesAnEntryOutsideTheRelaysBounds(t *testing.T) {
	t.Parallel()
	n, ctx, _ := loneNode(t, "locator")
	for i, entry := range []string{`{"node":"x","tick_rate":6000000000}`, `{"node":"x","tick_rate":0}`, `{"node":"x","tick_rate":30,"spectator_delay_ms":-5}`} {
		id := uuid.New()
		_, err := n.kv.Put(ctx, matchKey(id), []byte(entry))
		require.NoError(t, err)
		_, err = n.Locate(id)
		require.Error(t, err, "entry %d", i)
		assert.Contains(t, err.Error(), "outside 1..1000")
	}
	id := uuid.New()
	_, err := n.kv.Put(ctx, matchKey(id), []byte(`{"node":"x","tick_rate":30,"spectator_delay_ms":2000}`))
	require.NoError(t, err)
	r, err := n.Locate(id)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, r.SpectatorDelay)
}

// loneNode is a node (not started) of its own embedded NATS server, and a context that
// ends with the test, or when cancel is called.
func loneNode(t *testing.T, name string) (*Node, context.Context, context.CancelFunc) {
	t.Helper()
	e, err := StartEmbedded(EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	nc, err := Connect(e.ClientURL(), "test", ConnectOptions{})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n, err := NewNode(ctx, nc, Options{Name: name, URL: "ws://127.0.0.1:1/v1/ws", Heartbeat: time.Millisecond, LeaseTTL: time.Hour}, nil)
	require.NoError(t, err)
	return n, ctx, cancel
}

// stallingStream is a match's stream whose first lastSeq reads get no answer: its leader's
// NATS server died and JetStream has not elected another yet.
type stallingStream struct {
	jetstream.Stream
	stalls atomic.Int32 // reads still to stall
	reads  atomic.Int32
}

func (s *stallingStream) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	s.reads.Add(1)
	if s.stalls.Add(-1) >= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &jetstream.RawStreamMsg{Sequence: 42}, nil
}

var errConsumerMade = errors.New("the consumer was made (the test stops here)")

// OrderedConsumer stalls like GetLastMsgForSubject, then makes a consumer whose reading
// fails with errConsumerMade.
func (s *stallingStream) OrderedConsumer(ctx context.Context, _ jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	s.reads.Add(1)
	if s.stalls.Add(-1) >= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return madeConsumer{}, nil
}

type madeConsumer struct{ jetstream.Consumer }

func (madeConsumer) Messages(...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	return nil, errConsumerMade
}

// The consumer a claim reads the stream with is asked for again after readAttempt too:
// made while the stream had no leader, it hung until the claim's context ended (a chaos
// run: 32 s of stall, after the fix for lastSeq).
func TestAClaimAsksForItsConsumerAgainWhileTheStreamHasNoLeader(t *testing.T) {
	t.Parallel()
	st := &stallingStream{}
	st.stalls.Store(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := readStream(ctx, st, uuid.New(), 1, io.Discard)
	require.ErrorIs(t, err, errConsumerMade, "asked again before the claim's context ended")
	assert.Equal(t, int32(2), st.reads.Load())

	// An answer that is an error is not asked again.
	st.reads.Store(0)
	_, err = readStream(ctx, refusingStream{st}, uuid.New(), 1, io.Discard)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	assert.Equal(t, int32(1), st.reads.Load())
}

// refusingStream answers every consumer request: no such stream.
type refusingStream struct{ *stallingStream }

func (s refusingStream) OrderedConsumer(context.Context, jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	s.reads.Add(1)
	return nil, jetstream.ErrStreamNotFound
}

// A claim's read of the stream is tried again after readAttempt, not left to wait out the
// claim's whole context: once a leader answers, the claim goes on (waiting it out cost 30 s).
func TestAClaimReadsTheStreamAgainWhileItHasNoLeader(t *testing.T) {
	t.Parallel()
	st := &stallingStream{}
	st.stalls.Store(1)
	n := &Node{log: zap.NewNop(), stream: st}
	last, err := n.lastSeqRetrying(context.Background(), uuid.New())
	require.NoError(t, err)
	assert.Equal(t, uint64(42), last)
	assert.Equal(t, int32(2), st.reads.Load(), "a stalled read, then another that is answered")

	st.stalls.Store(1 << 20) // no leader for longer than the claim waits
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = n.lastSeqRetrying(ctx, uuid.New())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// A watch whose consumer stalls on a lost NATS server without ending freezes the node's
// view (seen for 11-13 s in a fault test): the node does not doubt its own lease
// for it — it trusts the heartbeat JetStream took — and a view that missed that heartbeat
// for two heartbeats is replaced.
func TestAFrozenDirectoryWatchIsReplacedAndTheNodeTrustsItsOwnHeartbeat(t *testing.T) {
	t.Parallel()
	kv := &watchKV{watchers: make(chan *fakeWatcher, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	restarts := prometheus.NewCounter(prometheus.CounterOpts{Name: "restarts"})
	n := &Node{opts: Options{Name: "a", Heartbeat: 10 * time.Millisecond, LeaseTTL: 100 * time.Millisecond}, log: zap.NewNop(), kv: kv, ctx: ctx,
		met: &metrics{watchRestarts: restarts},
		dir: directory{matches: map[uuid.UUID]*seen[MatchEntry]{}, nodes: map[string]*seen[NodeEntry]{}}}
	now := time.Now()
	n.dir.nodes["a"] = &seen[NodeEntry]{v: NodeEntry{Name: "a"}, revision: 5, at: now.Add(-time.Second)} // the view's, stale
	n.ownBeat, n.ownBeatRev = now.Add(-30*time.Millisecond), 7                                           // JetStream took revision 7
	view := inView(n)
	assert.True(t, view(func() bool { return n.alive("a", time.Now()) }), "its own heartbeat landed: alive, whatever the view")
	assert.False(t, view(func() bool { return n.alive("b", time.Now()) }))

	stuck := &fakeWatcher{ch: make(chan jetstream.KeyValueEntry)} // brings nothing, never ends
	done := make(chan struct{})
	go func() { n.followView(stuck); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a frozen watcher was followed for ever")
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(restarts))

	// A view that brought the heartbeat is not frozen; neither is one before any heartbeat.
	n.dir.nodes["a"].revision = 7
	assert.False(t, view(func() bool { return n.frozen(time.Now()) }))
	n.ownBeatRev = 0
	n.dir.nodes["a"].revision = 1
	assert.False(t, view(func() bool { return n.frozen(time.Now()) }))
	n.ownBeat = time.Now().Add(-time.Second)
	assert.False(t, view(func() bool { return n.alive("a", time.Now()) }), "an old heartbeat and a stale view: not alive")
}

// quietStream holds a match's stream of n messages; its first consumer delivers the first
// `quiet` and then nothing, as one on a NATS server that died without failing; later
// consumers deliver from their start sequence on.
type quietStream struct {
	jetstream.Stream
	n, quiet uint64
	mu       sync.Mutex
	starts   []uint64 // each consumer's first sequence
}

func (s *quietStream) GetLastMsgForSubject(context.Context, string) (*jetstream.RawStreamMsg, error) {
	return &jetstream.RawStreamMsg{Sequence: s.n}, nil
}

func (s *quietStream) OrderedConsumer(_ context.Context, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, to := uint64(1), s.n
	if cfg.DeliverPolicy == jetstream.DeliverByStartSequencePolicy {
		from = cfg.OptStartSeq
	}
	if len(s.starts) == 0 {
		to = s.quiet
	}
	s.starts = append(s.starts, from)
	return &listConsumer{from: from, to: to}, nil
}

type listConsumer struct {
	jetstream.Consumer
	from, to uint64
}

func (c *listConsumer) Consume(cb jetstream.MessageHandler, _ ...jetstream.PullConsumeOpt) (jetstream.ConsumeContext, error) {
	cc := &listConsume{stopped: make(chan struct{})}
	go func() {
		for seq := c.from; seq <= c.to; seq++ {
			select {
			case <-cc.stopped:
				return
			default:
			}
			cb(seqMsg{seq: seq})
		}
	}()
	return cc, nil
}

type listConsume struct {
	jetstream.ConsumeContext
	stopped chan struct{}
	once    sync.Once
}

func (c *listConsume) Stop() { c.once.Do(func() { close(c.stopped) }) }

// seqMsg is the message at a stream sequence (its data the sequence's low byte).
type seqMsg struct {
	jetstream.Msg
	seq uint64
}

func (m seqMsg) Data() []byte { return []byte{byte(m.seq)} }
func (m seqMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq}}, nil
}

// A spectators' consumer that goes quiet while the match's stream goes on is replaced by
// one that starts after the last message fed: the spectator gets every message once, in
// order (a fault test once left a spectator at the tick a NATS server was killed).
func TestASpectatorsConsumerThatGoesQuietIsReplacedAndNothingIsSkippedOrRepeated(t *testing.T) {
	t.Parallel()
	st := &quietStream{n: 40, quiet: 17}
	id := uuid.New()
	n := &Node{log: zap.NewNop(), stream: st, met: &metrics{
		consumers:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "c"}),
		consumerResets: prometheus.NewCounter(prometheus.CounterOpts{Name: "r"}),
	}}
	n.dir.matches = map[uuid.UUID]*seen[MatchEntry]{id: {v: MatchEntry{Node: "elsewhere"}}}
	var got []byte
	errAll := errors.New("every message fed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := n.Watch(ctx, id, func(b []byte) error {
		got = append(got, b...)
		if len(got) == int(st.n) {
			return errAll
		}
		return nil
	})
	require.ErrorIs(t, err, errAll)
	for i, b := range got {
		require.Equal(t, byte(i+1), b, "message %d", i+1)
	}
	assert.Equal(t, []uint64{1, 18}, st.starts, "replaced once, after the 17th")
	assert.Equal(t, 1.0, counterValue(t, n.met.consumerResets))
}

// A lease that ran out while the directory had no leader (this node's own heartbeats
// failed too) is not a dead node: the others have a whole lease from the directory's
// return to heartbeat again, and only then are judged.
func TestNoLeaseLapsesWhileTheDirectoryWasAway(t *testing.T) {
	t.Parallel()
	n := &Node{opts: Options{Name: "a", LeaseTTL: 5 * time.Second}}
	now := time.Now()
	n.dir.nodes = map[string]*seen[NodeEntry]{"b": {v: NodeEntry{Name: "b"}, at: now.Add(-6 * time.Second)}}
	assert.False(t, n.alive("b", now), "silent for more than a lease")

	n.beatFailed = true // this node's own last heartbeat failed: the directory is away
	assert.True(t, n.alive("b", now), "no lease is judged while the directory is away")
	n.beatFailed, n.beatBack = false, now.Add(-time.Second) // a heartbeat went through again
	assert.True(t, n.alive("b", now), "the directory came back a second ago: b has a lease from then")
	assert.False(t, n.alive("b", now.Add(5*time.Second)), "a lease after the directory's return, still silent: dead")
}

// revKV answers every Get with an entry of revision rev (or err).
type revKV struct {
	jetstream.KeyValue
	rev uint64
	err error
}

func (k revKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	if k.err != nil {
		return nil, k.err
	}
	return revEntry{rev: k.rev}, nil
}

type revEntry struct {
	jetstream.KeyValueEntry
	rev uint64
}

func (e revEntry) Revision() uint64 { return e.rev }

// Before it claims another node's match, a node reads the owner's heartbeat key itself:
// written since its view last saw it, the owner is alive and its view was behind.
func TestANodeDoesNotClaimAMatchWhoseOwnerIsHeartbeatingBehindItsStaleView(t *testing.T) {
	t.Parallel()
	c := claimable{id: uuid.New(), entry: MatchEntry{Node: "b"}, ownerRev: 7}
	n := &Node{ctx: context.Background(), log: zap.NewNop()}
	for _, tc := range []struct {
		kv   revKV
		own  uint64
		want bool
	}{
		{revKV{rev: 9}, 7, true},                         // written since: alive
		{revKV{rev: 7}, 7, false},                        // the last one the view saw: silent
		{revKV{err: jetstream.ErrKeyNotFound}, 7, false}, // gone: a clean leave, or no proof
		{revKV{err: context.DeadlineExceeded}, 7, false}, // no answer: no proof of life
		{revKV{rev: 9}, 0, false},                        // the view never saw the key: nothing to compare
	} {
		n.kv = tc.kv
		c.ownerRev = tc.own
		assert.Equal(t, tc.want, n.ownerBeats(c), "%+v", tc)
	}
}
