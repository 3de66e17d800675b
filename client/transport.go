// Which connection a session rides: WebSocket over TCP, or the same WebSocket protocol
// over a WebTransport session's stream (QUIC over UDP), with a bounded fallback.

package client

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Transport is a session's connection kind.
type Transport int32

const (
	// TransportAuto is WebTransport when the relay offers it (Options.WebTransport), else
	// or if it does not connect in time, WebSocket.
	TransportAuto Transport = iota
	// TransportWebSocket is WebSocket over TCP only.
	TransportWebSocket
	// TransportWebTransport is WebTransport only: a session fails to connect without it.
	TransportWebTransport
)

// DefaultWebTransportTimeout is how long TransportAuto waits for a WebTransport session
// before it falls back to WebSocket: a QUIC handshake takes a round trip or two, so
// a network that drops UDP is the likely reason past this.
const DefaultWebTransportTimeout = 3 * time.Second

// String is the name the command line takes (ParseTransport).
func (t Transport) String() string {
	switch t {
	case TransportWebSocket:
		return "websocket"
	case TransportWebTransport:
		return "webtransport"
	default:
		return "auto"
	}
}

// ParseTransport reads "auto", "websocket" or "webtransport".
func ParseTransport(s string) (Transport, error) {
	for _, t := range []Transport{TransportAuto, TransportWebSocket, TransportWebTransport} {
		if strings.EqualFold(s, t.String()) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("client: transport %q: use auto, websocket or webtransport", s)
}

// WebTransportEndpoint is a relay's WebTransport endpoint (the match API's
// "webtransport": its URL and its self-signed certificates' hex SHA-256 hashes).
type WebTransportEndpoint struct {
	URL        string
	CertHashes []string
}

// datagramHook, set by tests only, wraps each WebTransport connection's datagrams (a
// lossy network's, say).
var datagramHook atomic.Pointer[func(datagrams) datagrams]

// ErrNoWebTransport: TransportWebTransport was asked for and the relay offers none.
var ErrNoWebTransport = errors.New("client: the relay offers no WebTransport endpoint (Options.WebTransport is nil)")

// Transport is the transport of the session's current connection (WebSocket or
// WebTransport; never TransportAuto once Dial returned).
func (s *Session) Transport() Transport { return Transport(s.transport.Load()) }

// dial opens the WebSocket protocol to url over the transport the options pick. The
// WebTransport endpoint belongs to the URL the session was dialled with: a cluster's
// redirect to another node goes over WebSocket.
func (s *Session) dial(ctx context.Context, url string) (*websocket.Conn, datagrams, error) {
	t, wt := s.opts.Transport, s.opts.WebTransport
	if t == TransportWebTransport && wt == nil {
		return nil, nil, ErrNoWebTransport
	}
	if t != TransportWebSocket && wt != nil && url == s.url && !s.wtFailed {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if t == TransportAuto {
			wctx, cancel = context.WithTimeout(ctx, s.wtTimeout())
		}
		conn, dg, err := dialWebTransport(wctx, wt, s.opts.ListenUDP)
		cancel()
		if err == nil {
			if h := datagramHook.Load(); h != nil {
				dg = (*h)(dg)
			}
			s.transport.Store(int32(TransportWebTransport))
			return conn, dg, nil
		}
		if t == TransportWebTransport || ctx.Err() != nil {
			return nil, nil, fmt.Errorf("client: WebTransport %s: %w", wt.URL, err)
		}
		s.wtFailed = true // UDP blocked: later reconnects do not wait for it again
	}
	conn, _, err := websocket.Dial(ctx, url, dialOptions(&s.opts))
	if err != nil {
		return nil, nil, fmt.Errorf("client: dial %s: %w", url, err)
	}
	s.transport.Store(int32(TransportWebSocket))
	return conn, nil, nil
}

func (s *Session) wtTimeout() time.Duration {
	if s.opts.WebTransportTimeout > 0 {
		return s.opts.WebTransportTimeout
	}
	return DefaultWebTransportTimeout
}

// certHashes decodes an endpoint's hex hashes.
func certHashes(e *WebTransportEndpoint) ([][32]byte, error) {
	var out [][32]byte
	for _, h := range e.CertHashes {
		var b [32]byte
		if n, err := hex.Decode(b[:], []byte(h)); err != nil || n != len(b) {
			return nil, fmt.Errorf("client: certificate hash %q is not 64 hex digits", h)
		}
		out = append(out, b)
	}
	return out, nil
}
