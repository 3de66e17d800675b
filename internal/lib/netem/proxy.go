// The byte-level emulator: a delaying TCP proxy on loopback, for a slower network than
// loopback without root (no packet is ever lost).

package netem

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from its own loopback port to target, holding
// every chunk of bytes for delay (plus up to jitter, uniformly) in each direction. Bytes
// keep their order, as on a TCP path: a chunk never leaves before the one ahead of it.
type Proxy struct {
	ln            net.Listener
	target        string
	delay, jitter time.Duration
	wg            sync.WaitGroup
	mu            sync.Mutex
	conns         map[net.Conn]struct{}
}

// Start listens on 127.0.0.1 (a free port) and forwards to target (host:port).
func Start(target string, delay, jitter time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, delay: delay, jitter: jitter, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// track remembers a pair so close can cut it; false if the proxy is closing.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk delivered at its due time, and closes dst's write
// side (and src) when src ends.
func (p *Proxy) pipe(dst, src net.Conn) {
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.b); err != nil {
				src.Close() // the reader stops
				for range q {
				}
				return
			}
		}
	}()
	var last time.Time
	for {
		buf := make([]byte, 16<<10)
		n, err := src.Read(buf)
		if n > 0 {
			due := time.Now().Add(p.delay)
			if p.jitter > 0 {
				due = due.Add(rand.N(p.jitter))
			}
			if due.Before(last) {
				due = last
			}
			last = due
			q <- chunk{buf[:n], due}
		}
		if err != nil {
			close(q)
			<-done
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite()
			} else {
				dst.Close()
			}
			src.Close()
			return
		}
	}
}

// Close stops accepting and cuts every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
