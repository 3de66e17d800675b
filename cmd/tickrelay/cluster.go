// serve's cluster mode (relay nodes on NATS JetStream) and fetching replays from it.

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay/cluster"
)

// clusterFlags are serve's cluster flags; with neither --nats nor --nats-embedded the
// relay runs alone, exactly as before.
type clusterFlags struct {
	nats, nodeURL, nodeName     string
	embedded                    bool
	natsListen, natsStore       string
	natsClusterListen, natsName string
	natsRoutes                  []string
	replicas                    int
	heartbeat, lease, archive   time.Duration
	publishTimeout              time.Duration
	conn                        cluster.ConnectOptions
}

func (c *clusterFlags) enabled() bool { return c.nats != "" || c.embedded }

func (c *clusterFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&c.nats, "nats", "", "join a relay cluster on this NATS system (URL[,URL]; JetStream enabled); see docs/cluster.md")
	fl.BoolVar(&c.embedded, "nats-embedded", false, "run a NATS server with JetStream in this process and join the cluster on it (development; see --nats-routes)")
	fl.StringVar(&c.natsListen, "nats-listen", "127.0.0.1:4222", "with --nats-embedded: the NATS client address")
	fl.StringVar(&c.natsStore, "nats-store", "", "with --nats-embedded: JetStream's directory (default: a temporary one, removed at exit)")
	fl.StringVar(&c.natsName, "nats-name", "", "with --nats-embedded: the NATS server's name (default: nats-<node name>)")
	fl.StringVar(&c.natsClusterListen, "nats-cluster-listen", "", "with --nats-embedded: the NATS route address, to form a NATS cluster with --nats-routes")
	fl.StringSliceVar(&c.natsRoutes, "nats-routes", nil, "with --nats-embedded: route URLs of the other embedded NATS servers (nats://host:port,…)")
	fl.StringVar(&c.nodeURL, "node-url", "", "this node's public WebSocket URL, where players are redirected (default: ws://<--listen>/v1/ws)")
	fl.StringVar(&c.nodeName, "node-name", "", "this node's name in the cluster, unique (default: <host>-<port>)")
	fl.IntVar(&c.replicas, "nats-replicas", 0, "replicas of the directory and the stream (0: 3 if NATS has 3 servers or more, else 1)")
	fl.DurationVar(&c.heartbeat, "node-heartbeat", cluster.DefaultHeartbeat, "how often the node renews its lease")
	fl.DurationVar(&c.lease, "node-lease", cluster.DefaultLeaseTTL, "a node silent this long is dead and its matches move")
	fl.DurationVar(&c.publishTimeout, "node-publish-timeout", cluster.DefaultPublishTimeout, "a stream copy JetStream has not acknowledged this long stops the match here, to be resumed by whoever claims it (longer: fewer reconnects during a JetStream election, a longer tail; docs/cluster.md)")
	fl.DurationVar(&c.archive, "nats-archive", cluster.DefaultArchive, "how long JetStream keeps each match's stream (the replay archive)")
	registerNATSConn(fl, &c.conn)
}

// registerNATSConn adds the flags of a production NATS connection (credentials, TLS) to fl.
func registerNATSConn(fl *pflag.FlagSet, o *cluster.ConnectOptions) {
	fl.StringVar(&o.CredsFile, "nats-creds", "", "with --nats: a NATS user credentials file (JWT and NKey seed, as your NATS operator issues it)")
	fl.StringVar(&o.TLSCA, "nats-tls-ca", "", "with --nats: PEM file of the CA that signed the NATS servers' certificates; connects over TLS (default roots: the system's)")
	fl.StringVar(&o.TLSCert, "nats-tls-cert", "", "with --nats: PEM client certificate, for NATS servers that verify clients (with --nats-tls-key)")
	fl.StringVar(&o.TLSKey, "nats-tls-key", "", "with --nats: the PEM private key of --nats-tls-cert")
}

// natsConnOf reads the NATS connection flags registerNATSConn added to cmd or a parent.
func natsConnOf(cmd *cobra.Command) cluster.ConnectOptions {
	get := func(name string) string {
		if f := cmd.Flag(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return cluster.ConnectOptions{CredsFile: get("nats-creds"), TLSCA: get("nats-tls-ca"), TLSCert: get("nats-tls-cert"), TLSKey: get("nats-tls-key")}
}

// joined is a node in the cluster and what to close when the relay stops.
type joined struct {
	url  string // the node's public WebSocket URL
	node *cluster.Node
	nc   *nats.Conn
	emb  *cluster.Embedded
}

func (j *joined) stop() {
	j.node.Stop()
	j.nc.Close()
	if j.emb != nil {
		j.emb.Stop()
	}
}

var nameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// joinCluster connects (or starts the embedded NATS) and prepares the node.
func joinCluster(ctx context.Context, c clusterFlags, listen string, tls bool, log *zap.Logger) (*joined, error) {
	if c.nats != "" && c.embedded {
		return nil, fmt.Errorf("--nats and --nats-embedded exclude each other: connect to a NATS system, or run one in process")
	}
	if c.embedded && c.conn != (cluster.ConnectOptions{}) {
		return nil, fmt.Errorf("--nats-creds and --nats-tls-* go with --nats (a NATS system of yours); the embedded NATS server has no accounts and no TLS")
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", listen, err)
	}
	if c.nodeURL == "" {
		if port == "0" {
			return nil, fmt.Errorf("a cluster node needs --node-url (its public WebSocket URL) when --listen has no fixed port")
		}
		scheme := "ws"
		if tls {
			scheme = "wss"
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			h, _ := os.Hostname()
			host = h
		}
		c.nodeURL = scheme + "://" + net.JoinHostPort(host, port) + "/v1/ws"
	}
	if c.nodeName == "" {
		h, _ := os.Hostname()
		c.nodeName = strings.Trim(nameChars.ReplaceAllString(h+"-"+port, "-"), "-")
	}
	j := &joined{url: c.nodeURL}
	urls := c.nats
	if c.embedded {
		name := c.natsName
		if name == "" {
			name = "nats-" + c.nodeName
		}
		j.emb, err = cluster.StartEmbedded(cluster.EmbeddedOptions{Name: name, Listen: c.natsListen, StoreDir: c.natsStore,
			ClusterListen: c.natsClusterListen, Routes: c.natsRoutes})
		if err != nil {
			return nil, err
		}
		urls = j.emb.ClientURL()
		log.Info("embedded NATS server started", zap.String("url", urls), zap.String("routes", c.natsClusterListen))
	}
	j.nc, err = cluster.Connect(urls, c.nodeName, c.conn)
	if err != nil {
		if j.emb != nil {
			j.emb.Stop()
		}
		return nil, err
	}
	j.node, err = cluster.NewNode(ctx, j.nc, cluster.Options{Name: c.nodeName, URL: c.nodeURL, Replicas: c.replicas,
		Heartbeat: c.heartbeat, LeaseTTL: c.lease, Archive: c.archive, PublishTimeout: c.publishTimeout}, log)
	if err != nil {
		j.nc.Close()
		if j.emb != nil {
			j.emb.Stop()
		}
		return nil, err
	}
	return j, nil
}

// replayPath resolves a replay argument: a file, or with --nats a match id whose stream
// is fetched from JetStream into a temporary file (removed by done).
func replayPath(cmd *cobra.Command, arg string) (path string, done func(), err error) {
	urls := ""
	if f := cmd.Flag("nats"); f != nil {
		urls = f.Value.String()
	}
	id, perr := uuid.Parse(arg)
	if urls == "" || perr != nil {
		return arg, func() {}, nil
	}
	f, err := os.CreateTemp("", "tickrelay-"+id.String()+"-*.tkr")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	_, err = cluster.FetchReplay(ctx, urls, natsConnOf(cmd), id, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", nil, exitError{exitUnusable, fmt.Errorf("fetching match %s from JetStream at %s: %w", id, urls, err)}
	}
	return f.Name(), func() { _ = os.Remove(f.Name()) }, nil
}
