// Serving a relay over HTTP: the one way a relay is put on the network, by `tickrelay
// serve`, the demo and the load tester's relay in its own process.

package relay

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
)

// ListenOptions say where a relay serves.
type ListenOptions struct {
	// Addr is the public endpoint's address (host:port; port 0 for a free one).
	Addr string
	// Listener, if set, is the public endpoint's listener, already open (Addr is then
	// unused): one made in another network namespace, or handed over by a supervisor.
	Listener net.Listener
	// TCP tunes every connection the public endpoint accepts: how long a lost segment
	// may hold up the frames behind it (internal/lib/tcptune; docs/operations.md). The zero
	// value is tcptune's defaults; tcptune.Kernel leaves the kernel's.
	TCP tcptune.Options
	// Handler serves it; nil is the relay's own Handler (a cluster node passes its own).
	Handler http.Handler
	// TLSCert and TLSKey, both or neither: the public endpoint serves TLS.
	TLSCert, TLSKey string
	// WebTransportAddr is a UDP address (host:port; port 0 for a free one) the public
	// endpoint is also served on as WebTransport (HTTP/3); empty for none. Its TLS is
	// TLSCert's, or self-signed certificates the relay makes and rotates (webtransport.go).
	WebTransportAddr string
	// WebTransportConn, if set, is that UDP socket, already open (WebTransportAddr only
	// names the certificate's host then); the relay closes it at Shutdown.
	WebTransportConn net.PacketConn
	// AdminAddr is the admin endpoint's address (metrics, health, the match API's admin
	// side); empty for none. Pprof adds /debug/pprof to it.
	AdminAddr string
	Pprof     bool
}

// Listening is a relay's running HTTP servers.
type Listening struct {
	Addr      net.Addr
	AdminAddr net.Addr // nil without ListenOptions.AdminAddr
	// WebTransportAddr is the UDP address of the WebTransport endpoint, nil without one.
	WebTransportAddr net.Addr
	servers          []*http.Server
	errc             chan error
	wg               sync.WaitGroup
}

// Timeouts of the relay's HTTP servers: a client has 10 s to send its request's header,
// and an idle keep-alive connection is closed after a minute (it counts against no
// connection cap; a WebSocket, once hijacked, is not affected).
const (
	readHeaderTimeout = 10 * time.Second
	httpIdleTimeout   = time.Minute
)

// Listen serves the relay on o's addresses. The servers' goroutines inherit the
// caller's profile labels.
func (s *Server) Listen(o ListenOptions) (*Listening, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("relay: a TLS certificate and key go together")
	}
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", o.Addr); err != nil {
			return nil, err
		}
	}
	ln = tunedListener{ln, o.TCP}
	var err error
	var aln net.Listener
	if o.AdminAddr != "" {
		if aln, err = net.Listen("tcp", o.AdminAddr); err != nil {
			ln.Close()
			return nil, err
		}
	}
	h := o.Handler
	if h == nil {
		h = s.Handler()
	}
	wl, err := s.listenWebTransport(o)
	if err != nil {
		ln.Close()
		if aln != nil {
			aln.Close()
		}
		return nil, err
	}
	l := &Listening{Addr: ln.Addr(), errc: make(chan error, 3)}
	l.serve(h, func(hs *http.Server) error {
		if o.TLSCert != "" {
			return hs.ServeTLS(ln, o.TLSCert, o.TLSKey)
		}
		return hs.Serve(ln)
	})
	if wl != nil {
		l.WebTransportAddr = wl.Addr()
		// The session's stream is already TLS (QUIC's): HTTP over it is plain.
		l.serve(h, func(hs *http.Server) error {
			// A request's connection is the WebTransport session, whose datagrams its
			// player's session sends and reads (datagram.go).
			hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, datagramConnKey{}, c)
			}
			return hs.Serve(wl)
		})
	}
	if aln != nil {
		l.AdminAddr = aln.Addr()
		l.serve(s.AdminHandler(o.Pprof), func(hs *http.Server) error { return hs.Serve(aln) })
	}
	return l, nil
}

// tunedListener tunes each connection it accepts, before the first byte is read: the
// options a kernel refuses are left as they were (tcptune), so an accept never fails
// for them.
type tunedListener struct {
	net.Listener
	tcp tcptune.Options
}

func (l tunedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		tcptune.Apply(c, l.tcp)
	}
	return c, err
}

func (l *Listening) serve(h http.Handler, run func(*http.Server) error) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: httpIdleTimeout}
	l.servers = append(l.servers, hs)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := run(hs); !errors.Is(err, http.ErrServerClosed) {
			l.errc <- err
		}
	}()
}

// Err delivers the error of a server that stopped on its own (its listener failed).
func (l *Listening) Err() <-chan error { return l.errc }

// Shutdown stops the servers: it drains their requests until ctx ends, then closes
// what is left, and returns once every server's goroutine has. The relay's own
// Shutdown, which ends its matches and connections, comes first.
func (l *Listening) Shutdown(ctx context.Context) {
	for _, hs := range l.servers {
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
	}
	l.wg.Wait()
}
