package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
)

// Defaults, documented where they are defined (docs/cluster.md explains the timing).
const (
	// DefaultHeartbeat: a node rewrites its heartbeat key (its lease) every second.
	DefaultHeartbeat = time.Second
	// DefaultLeaseTTL: a node whose heartbeat key has not changed for 5 s (five missed
	// heartbeats), as seen on the observer's own clock, is dead; its matches are claimed.
	DefaultLeaseTTL = 5 * time.Second
	// DefaultArchive: finished (and running) matches' streams stay in JetStream 7 days.
	DefaultArchive = 7 * 24 * time.Hour
	// DefaultPublishTimeout: a stream copy not acknowledged by JetStream within 2 s fails,
	// and the match stops on this node (relay.ErrMoved) to be resumed by whoever claims it.
	DefaultPublishTimeout = 2 * time.Second
	// DefaultRequestTimeout bounds a forwarded API request: 10 s.
	DefaultRequestTimeout = 10 * time.Second
)

// Options configure a Node.
type Options struct {
	// Name identifies the node in the directory, subjects, logs and metrics: letters,
	// digits, '-' and '_'. Required, unique in the cluster.
	Name string
	// URL is the node's public WebSocket URL (ws://host:port/v1/ws), where players are
	// redirected. Required.
	URL string
	// Replicas of the directory bucket and the stream: 3 in production (one NATS server
	// may fail without losing anything). 0 means 3 if the connection knows at least 3
	// NATS servers, else 1.
	Replicas int
	// Heartbeat, LeaseTTL: see DefaultHeartbeat, DefaultLeaseTTL.
	Heartbeat, LeaseTTL time.Duration
	// Archive is how long a match's stream stays in JetStream. Default DefaultArchive.
	Archive time.Duration
	// PublishTimeout: see DefaultPublishTimeout.
	PublishTimeout time.Duration
}

// withDefaults checks o and fills in its defaults; servers is how many NATS servers the
// connection knows.
func (o Options) withDefaults(servers int) (Options, error) {
	if !validName.MatchString(o.Name) {
		return o, fmt.Errorf("%w: node name %q: use 1-64 letters, digits, '-' or '_'", ErrOptions, o.Name)
	}
	if o.URL == "" {
		return o, fmt.Errorf("%w: the node's public WebSocket URL is required (--node-url), e.g. ws://10.0.0.5:7400/v1/ws", ErrOptions)
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
		if servers >= 3 {
			o.Replicas = 3
		}
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.LeaseTTL < 2*o.Heartbeat {
		return o, fmt.Errorf("%w: the lease (%s) must be at least two heartbeats (%s)", ErrOptions, o.LeaseTTL, o.Heartbeat)
	}
	if o.Archive <= 0 {
		o.Archive = DefaultArchive
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	return o, nil
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Node is one relay of the cluster. It implements relay.Cluster.
type Node struct {
	opts   Options
	log    *zap.Logger
	nc     *nats.Conn
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	hooks  jetstream.KeyValue // the webhooks' cursors (HooksBucket)
	stream jetstream.Stream
	met    *metrics

	srv     *relay.Server
	handler http.Handler // the relay's own

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sub    *nats.Subscription

	mu       sync.Mutex
	dir      directory            // the directory's view: what its watcher saw
	claimed  map[uuid.UUID]uint64 // claimed matches: the stream's last sequence they resume after
	resuming map[uuid.UUID]bool   // claimed, not yet running here
	// claimFails counts the claims of a match in a row that the relay refused to resume.
	claimFails map[uuid.UUID]int
	// claimDelay (a test's, in nanoseconds) slows each claim down after it reads where
	// the match's stream ends: a slow claimer (a long stream to copy, a busy JetStream).
	claimDelay atomic.Int64
	pending    map[uuid.UUID]string // matches this node placed, until the view brings them
	// The node's own last heartbeat that JetStream took: when, and the revision it got.
	// A node trusts it for its own lease (alive), not only its view of the directory,
	// which may be stale; a view that does not bring it within two heartbeats is frozen
	// and replaced (follow).
	ownBeat    time.Time
	ownBeatRev uint64
	// beatFailed: this node's last heartbeat failed; beatBack: when one went through again
	// after a failure. Every node's heartbeats fail while the directory has no leader, so
	// no other node's lease is judged lapsed meanwhile, nor until a whole lease after the
	// directory came back (alive).
	beatFailed bool
	beatBack   time.Time
	// started: when the node was made (NodeEntry.Started).
	started time.Time
	// beatMu orders the heartbeats (heartbeat).
	beatMu sync.Mutex
	// leaving: HandOver began; the heartbeat says so (NodeEntry.Leaving).
	leaving atomic.Bool
	// wake asks the sweep to run now (a match was handed to this node), not at its next
	// period: a player waits for the match while it is between two nodes.
	wake chan struct{}
}

// NewNode prepares a node on nc: it creates (or checks) the directory bucket and the
// stream. Pass it as relay.Options.Cluster, then call Start with the server.
func NewNode(ctx context.Context, nc *nats.Conn, opts Options, log *zap.Logger) (*Node, error) {
	opts, err := opts.withDefaults(len(nc.Servers()))
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: JetStream: %w", err)
	}
	n := &Node{opts: opts, log: log.With(zap.String("node", opts.Name)), nc: nc, js: js,
		dir:     directory{matches: map[uuid.UUID]*seen[MatchEntry]{}, nodes: map[string]*seen[NodeEntry]{}},
		pending: map[uuid.UUID]string{}, claimed: map[uuid.UUID]uint64{}, resuming: map[uuid.UUID]bool{},
		claimFails: map[uuid.UUID]int{}, wake: make(chan struct{}, 1), started: time.Now().UTC().Round(0)}
	// JetStream in a NATS cluster answers once its meta leader is elected: retry a while.
	err = retry(ctx, func(ctx context.Context) error {
		n.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: DirectoryBucket, Description: "tickrelay: match → owning node, node heartbeats",
			History: 1, Replicas: opts.Replicas, Storage: jetstream.FileStorage,
		})
		if err != nil {
			return fmt.Errorf("the directory bucket %s: %w", DirectoryBucket, err)
		}
		n.hooks, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: HooksBucket, Description: "tickrelay: match → its webhooks' delivery cursor",
			History: 1, Replicas: opts.Replicas, Storage: jetstream.FileStorage,
		})
		if err != nil {
			return fmt.Errorf("the webhooks' bucket %s: %w", HooksBucket, err)
		}
		n.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: StreamName, Description: "tickrelay: every match's stream records, one subject per match",
			Subjects: []string{matchSubjects}, Retention: jetstream.LimitsPolicy, MaxAge: opts.Archive,
			Storage: jetstream.FileStorage, Replicas: opts.Replicas, Discard: jetstream.DiscardOld,
		})
		if err != nil {
			return fmt.Errorf("the stream %s: %w", StreamName, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return n, nil
}

// retry runs fn until it succeeds or ctx ends (30 s at most), returning fn's last error.
func retry(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		err := fn(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Name returns the node's name.
func (n *Node) Name() string { return n.opts.Name }

// Start runs the node with srv: the directory's view, the heartbeat, the API responder
// and the failover sweep. Stop ends them.
func (n *Node) Start(srv *relay.Server) error {
	n.srv, n.handler = srv, srv.Handler()
	n.met = newMetrics(srv, n.opts.Name)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	w, err := n.kv.WatchAll(n.ctx)
	if err != nil {
		return fmt.Errorf("cluster: watching the directory: %w", err)
	}
	sub, err := n.nc.Subscribe(fmt.Sprintf(nodeAPIFormat, n.opts.Name), n.serveRequest)
	if err != nil {
		_ = w.Stop()
		return fmt.Errorf("cluster: the node's API subject: %w", err)
	}
	n.sub = sub
	if err := n.heartbeat(n.ctx); err != nil {
		n.log.Warn("first heartbeat failed; retrying", zap.Error(err))
	}
	n.wg.Add(3)
	go func() { defer n.wg.Done(); n.keepView(w) }()
	go func() { defer n.wg.Done(); n.every("heartbeat", n.heartbeat, nil) }()
	go func() {
		defer n.wg.Done()
		n.every("sweep", func(context.Context) error { n.sweep(); return nil }, n.wake)
	}()
	n.log.Info("relay node joined the cluster", zap.String("url", n.opts.URL), zap.Int("replicas", n.opts.Replicas))
	return nil
}

// Stop ends the node's loops and removes its heartbeat key (a clean leave: its matches,
// already ended by the server's shutdown, need no failover). It does not close the NATS
// connection, which is the caller's.
func (n *Node) Stop() {
	if n.cancel == nil {
		return
	}
	_ = n.sub.Unsubscribe()
	n.cancel()
	n.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := n.kv.Delete(ctx, nodeKey(n.opts.Name)); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		n.log.Warn("removing the node's heartbeat", zap.Error(err))
	}
}

// wakeSweep asks the sweep loop to run at once; a wake already pending covers this one.
func (n *Node) wakeSweep() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// every runs job every heartbeat period, and at once when wake (if not nil) says so,
// until the node stops. The heartbeat and the sweep run apart: a sweep's claims may take
// seconds each (a long match's stream to read), and a node that claims must go on
// heartbeating, or the others would take it for dead and claim its matches too.
func (n *Node) every(name string, job func(context.Context) error, wake <-chan struct{}) {
	t := time.NewTicker(n.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-wake: // a nil channel: never
		}
		if err := job(n.ctx); err != nil && n.ctx.Err() == nil {
			n.log.Warn(name+" failed", zap.Error(err))
		}
	}
}
