// Package natsprocs runs a NATS JetStream cluster of three servers as processes of their
// own on loopback, for tests that kill, signal and restart them as an operator or a crash
// would: the chaos and upgrade drills of relay/cluster and the multi-process upgrade test
// of e2e. Each server keeps its store across a restart, and a lame duck (SIGUSR2) hands
// its JetStream leaderships over and closes its clients within lame_duck_grace_period (2 s).
package natsprocs

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Proc is one nats-server process.
type Proc struct {
	Name string
	URL  string // its client URL
	// Dead: killed, or exited after its lame duck, and not started again.
	Dead bool

	conf    string
	command func(conf string) *exec.Cmd
	cmd     *exec.Cmd
	logs    *bytes.Buffer
}

// Start starts three servers in one JetStream cluster and waits until JetStream answers.
// command makes the process that serves a config file: a standalone nats-server
// (`exec.Command(bin, "-c", conf)`) or a test binary that serves the same server code.
// The processes are killed at the test's end; their logs are printed if it failed.
func Start(t testing.TB, command func(conf string) *exec.Cmd) []*Proc {
	t.Helper()
	dir := t.TempDir()
	var client, route [3]int
	for i := range 3 {
		client[i], route[i] = freePort(t), freePort(t)
	}
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", route[i]))
	}
	var ps []*Proc
	for i := range 3 {
		name := fmt.Sprintf("nats-%d", i+1)
		conf := filepath.Join(dir, name+".conf")
		require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `server_name: %s
listen: 127.0.0.1:%d
lame_duck_duration: 30s
lame_duck_grace_period: 2s
jetstream { store_dir: %q }
cluster { name: drill, listen: 127.0.0.1:%d, routes: [%s] }
`, name, client[i], filepath.Join(dir, name), route[i], strings.Join(routes, ", ")), 0o644))
		p := &Proc{Name: name, URL: fmt.Sprintf("nats://127.0.0.1:%d", client[i]), conf: conf, command: command, logs: &bytes.Buffer{}}
		p.Start(t)
		ps = append(ps, p)
		t.Cleanup(func() {
			if !p.Dead {
				_ = p.cmd.Process.Kill()
			}
			_ = p.cmd.Wait()
			if t.Failed() {
				t.Logf("%s:\n%s", name, p.logs.String())
			}
		})
	}
	WaitJetStream(t, URLs(ps))
	return ps
}

// URLs is the servers' client URLs, comma-separated, as nats.Connect takes them.
func URLs(ps []*Proc) string {
	var urls []string
	for _, p := range ps {
		urls = append(urls, p.URL)
	}
	return strings.Join(urls, ",")
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts the process on its config (again, after it stopped: the same store).
func (p *Proc) Start(t testing.TB) {
	t.Helper()
	cmd := p.command(p.conf)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	require.NoError(t, cmd.Start())
	p.cmd, p.Dead = cmd, false
}

// Kill ends the process with SIGKILL, as a crash would.
func (p *Proc) Kill() {
	p.Dead = true
	_ = p.cmd.Process.Kill()
}

// LameDuck tells the server to go as an upgrade does (SIGUSR2: lame duck mode) and waits
// for it to exit.
func (p *Proc) LameDuck(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit within a minute of its lame duck signal", p.Name)
	}
	p.Dead = true
}

// WaitJetStream waits until JetStream answers at urls: the cluster has a meta leader.
func WaitJetStream(t testing.TB, urls string) {
	t.Helper()
	require.Eventually(t, func() bool {
		nc, err := nats.Connect(urls)
		if err != nil {
			return false
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = js.AccountInfo(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the nats-server cluster did not come up")
}

// WaitReplicas waits until every stream of the cluster (a relay cluster's matches' and
// its buckets') has a leader and every replica current, server among them: the cluster
// is whole again after server restarted.
func WaitReplicas(t testing.TB, nc *nats.Conn, server string) {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		streams := js.ListStreams(ctx)
		seen := 0
		for info := range streams.Info() {
			seen++
			cl := info.Cluster
			if cl == nil || cl.Leader == "" {
				return false
			}
			back := cl.Leader == server
			for _, r := range cl.Replicas {
				if !r.Current || r.Offline {
					return false
				}
				back = back || r.Name == server
			}
			if !back {
				return false
			}
		}
		return streams.Err() == nil && seen > 0
	}, 60*time.Second, 200*time.Millisecond, "the cluster's streams did not get all their replicas back after %s restarted", server)
}

// LeaderOf names the server that leads JetStream stream name.
func LeaderOf(t testing.TB, nc *nats.Conn, name string) string {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.NotNil(t, info.Cluster)
	return info.Cluster.Leader
}
