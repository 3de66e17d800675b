package wtransport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// ListenOptions configure a Listener; the zero value of each field is its default.
type ListenOptions struct {
	// Path is the URL path sessions are opened on; default "/".
	Path string
	// AcceptTimeout is how long a new session has to open its stream; default 10 s.
	AcceptTimeout time.Duration
	// Backlog is how many sessions wait for Accept before new ones are refused; default 128.
	Backlog int
	// IdleTimeout closes a session that received nothing for this long; default 30 s
	// (the relay's clients ping more often than that).
	IdleTimeout time.Duration
}

// Listener accepts WebTransport sessions on one UDP socket; it is a net.Listener whose
// Accept returns each session's *Conn.
type Listener struct {
	pc     net.PacketConn
	wt     *webtransport.Server
	opts   ListenOptions
	conns  chan *Conn
	done   chan struct{}
	closed sync.Once
	wg     sync.WaitGroup
}

var _ net.Listener = (*Listener)(nil)

// Listen serves WebTransport on pc (a UDP socket the caller opened, which the Listener
// owns from then on: Close closes it) with tlsConf, whose certificates it uses
// (GetCertificate included); it sets the HTTP/3 protocol itself.
func Listen(pc net.PacketConn, tlsConf *tls.Config, o ListenOptions) (*Listener, error) {
	if tlsConf == nil || (len(tlsConf.Certificates) == 0 && tlsConf.GetCertificate == nil) {
		return nil, errors.New("wtransport: a certificate is required (QUIC is always TLS)")
	}
	if o.Path == "" {
		o.Path = "/"
	}
	if o.AcceptTimeout <= 0 {
		o.AcceptTimeout = 10 * time.Second
	}
	if o.Backlog <= 0 {
		o.Backlog = 128
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Second
	}
	l := &Listener{pc: pc, opts: o, conns: make(chan *Conn, o.Backlog), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc(o.Path, l.upgrade)
	h3 := &http3.Server{
		TLSConfig: http3.ConfigureTLSConfig(tlsConf),
		QUICConfig: &quic.Config{
			EnableDatagrams: true, EnableStreamResetPartialDelivery: true,
			MaxIdleTimeout: o.IdleTimeout, MaxIncomingStreams: 4,
		},
		Handler: mux,
	}
	// The token in the first message authenticates a session, as on the WebSocket path,
	// so any page's origin may open one.
	l.wt = &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		_ = l.wt.Serve(pc) // ends when Close closes the server
	}()
	return l, nil
}

// upgrade takes a CONNECT request over as a session and waits (on the request's own
// goroutine) for the one stream the client opens.
func (l *Listener) upgrade(w http.ResponseWriter, r *http.Request) {
	sess, err := l.wt.Upgrade(w, r)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(sess.Context(), l.opts.AcceptTimeout)
	defer cancel()
	str, err := sess.AcceptStream(ctx)
	if err != nil {
		_ = sess.CloseWithError(1, ErrNoStream.Error())
		return
	}
	c := newConn(sess, str, nil)
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	default:
		_ = sess.CloseWithError(2, "wtransport: the relay's accept queue is full; try again later")
	}
}

// Accept waits for the next session.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// Close stops accepting and closes the UDP server and every session still open; it
// returns once the server's goroutine has.
func (l *Listener) Close() error {
	l.closed.Do(func() {
		close(l.done)
		_ = l.wt.Close()
		// QUIC's reader of a socket it did not open stops only when the socket closes.
		_ = l.pc.Close()
		l.wg.Wait()
		for {
			select {
			case c := <-l.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

// Addr is the UDP address sessions are served on.
func (l *Listener) Addr() net.Addr { return l.pc.LocalAddr() }
