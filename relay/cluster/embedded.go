// An in-process NATS server with JetStream, for development (serve --nats-embedded) and
// tests; production runs nats-server itself (docs/cluster.md).

package cluster

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configure an in-process NATS server. The zero value is a standalone
// server with JetStream on a random loopback port, its store in a new temporary directory.
type EmbeddedOptions struct {
	// Name is the server's name, unique in its NATS cluster. Default "tickrelay-nats".
	Name string
	// Listen is the client address, host:port; empty means 127.0.0.1 on a random port.
	Listen string
	// StoreDir holds JetStream's files; empty means a new temporary directory, removed
	// when the server stops.
	StoreDir string
	// ClusterListen is the route address (host:port) of a NATS cluster; empty means a
	// standalone server.
	ClusterListen string
	// Routes are the route URLs (nats://host:port) of the cluster's servers; the
	// server's own is ignored.
	Routes []string
	// ClusterName names the NATS cluster. Default "tickrelay".
	ClusterName string
}

// Embedded is a running in-process NATS server.
type Embedded struct {
	*server.Server
	tmp string
}

// StartEmbedded starts a NATS server with JetStream and waits until it takes clients.
// In a cluster, JetStream becomes usable once a majority of its servers are up.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	if o.Name == "" {
		o.Name = "tickrelay-nats"
	}
	if o.ClusterName == "" {
		o.ClusterName = "tickrelay"
	}
	host, port, err := splitAddr(o.Listen, "127.0.0.1", server.RANDOM_PORT)
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded NATS listen address: %w", err)
	}
	e := &Embedded{}
	if o.StoreDir == "" {
		if e.tmp, err = os.MkdirTemp("", "tickrelay-nats-*"); err != nil {
			return nil, fmt.Errorf("cluster: embedded NATS store: %w", err)
		}
		o.StoreDir = e.tmp
	}
	opts := &server.Options{
		ServerName: o.Name, Host: host, Port: port, JetStream: true,
		StoreDir: filepath.Join(o.StoreDir, o.Name), NoSigs: true, NoLog: true,
	}
	if o.ClusterListen != "" {
		ch, cp, err := splitAddr(o.ClusterListen, "127.0.0.1", server.RANDOM_PORT)
		if err != nil {
			return nil, fmt.Errorf("cluster: embedded NATS cluster address: %w", err)
		}
		opts.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: ch, Port: cp}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("cluster: embedded NATS route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("cluster: embedded NATS: %w", err)
	}
	e.Server = s
	s.Start()
	if !s.ReadyForConnections(embeddedReadyTimeout) {
		missing := "its client address " + o.Listen
		if s.Addr() != nil {
			missing = "its cluster address " + o.ClusterListen
		}
		e.Stop()
		return nil, fmt.Errorf("cluster: embedded NATS %s did not listen on %s within %s (is the port taken?)", o.Name, missing, embeddedReadyTimeout)
	}
	return e, nil
}

// Stop shuts the server down and removes its temporary store, if it made one.
func (e *Embedded) Stop() {
	if e.Server != nil {
		e.Shutdown()
		e.WaitForShutdown()
	}
	e.cleanup()
}

func (e *Embedded) cleanup() {
	if e.tmp != "" {
		_ = os.RemoveAll(e.tmp)
	}
}

// StartEmbeddedCluster starts n routed NATS servers with JetStream on loopback, their
// stores under dir (a temporary directory if empty), and returns them once each takes
// clients. ClientURLs lists their client URLs.
//
// The route ports are chosen before the servers start (each server's routes name them
// all), so another process may take one in between: then the whole cluster is started
// again on other ports, with fresh stores, up to clusterStartAttempts times.
func StartEmbeddedCluster(n int, dir string) ([]*Embedded, error) {
	var err error
	for i := range clusterStartAttempts {
		stores := dir
		if dir != "" && i > 0 {
			stores = filepath.Join(dir, "retry-"+strconv.Itoa(i))
		}
		var out []*Embedded
		if out, err = startEmbeddedCluster(n, stores); err == nil {
			return out, nil
		}
	}
	return nil, err
}

// clusterStartAttempts bounds StartEmbeddedCluster's tries.
const clusterStartAttempts = 3

func startEmbeddedCluster(n int, dir string) ([]*Embedded, error) {
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		p, err := pickPort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(p)
	}
	var out []*Embedded
	for i := range n {
		e, err := StartEmbedded(EmbeddedOptions{
			Name: fmt.Sprintf("nats-%d", i+1), StoreDir: dir,
			ClusterListen: "127.0.0.1:" + strconv.Itoa(ports[i]), Routes: routes,
		})
		if err != nil {
			for _, x := range out {
				x.Stop()
			}
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ClientURLs is the comma-separated client URLs of servers, for Connect.
func ClientURLs(servers []*Embedded) string {
	s := ""
	for i, e := range servers {
		if i > 0 {
			s += ","
		}
		s += e.ClientURL()
	}
	return s
}

// embeddedReadyTimeout bounds the wait for an embedded server's listeners; pickPort
// picks a route port. Tests change both.
var (
	embeddedReadyTimeout = 10 * time.Second
	pickPort             = freePort
)

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cluster: a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// splitAddr splits host:port, with defaults for an empty address or part.
func splitAddr(addr, defHost string, defPort int) (string, int, error) {
	if addr == "" {
		return defHost, defPort, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	if h == "" {
		h = defHost
	}
	port := defPort
	if p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return "", 0, fmt.Errorf("port %q: %w", p, err)
		}
	}
	return h, port, nil
}
