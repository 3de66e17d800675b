// Package balancer is one TCP address in front of a changing set of relay nodes, as a load
// balancer or a DNS name is in production: each connection goes to the next target in
// turn, and a target that does not answer is passed over. Tests of rolling restarts give
// players and spectators its address, which outlives every node.
package balancer

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Balancer forwards each connection to one of its targets.
type Balancer struct {
	// Addr is its listen address (host:port).
	Addr string

	mu    sync.Mutex
	addrs []string // the targets (host:port), as Set left them
	next  int
	conns []net.Conn
}

// Start listens on loopback and forwards to targets until the test ends.
func Start(t testing.TB, targets ...string) *Balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &Balancer{Addr: ln.Addr().String()}
	b.Set(targets...)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); b.forward(in) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		wg.Wait()
	})
	return b
}

// Set makes targets (host:port) the balancer's: a node drained is left out before it
// stops, a new one added once it serves. Connections already forwarded stay.
func (b *Balancer) Set(targets ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addrs = slices.Clone(targets)
}

func (b *Balancer) forward(in net.Conn) {
	b.mu.Lock()
	addrs := slices.Clone(b.addrs)
	b.mu.Unlock()
	var out net.Conn
	for range len(addrs) {
		b.mu.Lock()
		addr := addrs[b.next%len(addrs)]
		b.next++
		b.mu.Unlock()
		var err error
		if out, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
	}
	if out == nil {
		in.Close()
		return
	}
	b.mu.Lock()
	b.conns = append(b.conns, in, out)
	b.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
	in.Close()
	out.Close()
	<-done
}
