//go:build !js

package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
	"github.com/tickrelay/tickrelay/internal/lib/wtransport"
)

// dialOptions turns compression off: frames are tiny and per-message deflate would only
// cost CPU and memory on both ends.
func dialOptions(o *Options) *websocket.DialOptions {
	hc := o.HTTPClient
	if hc == nil && !o.KernelTCP {
		hc = tunedClient
	}
	return &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPClient: hc}
}

// tunedClient is http.DefaultClient with its sockets tuned (tcptune's defaults) before
// they connect: a lost segment of the stream is sent again after a floor of tens of
// milliseconds instead of the kernel's 200.
var tunedClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: tcptune.Control(tcptune.Options{})}
	t.DialContext = d.DialContext
	return &http.Client{Transport: t}
}()

// dialWebTransport opens a WebTransport session to e and speaks the WebSocket protocol
// over its stream: the HTTP upgrade goes over the stream the dial returns, once.
func dialWebTransport(ctx context.Context, e *WebTransportEndpoint, listenUDP func() (net.PacketConn, error)) (*websocket.Conn, datagrams, error) {
	hashes, err := certHashes(e)
	if err != nil {
		return nil, nil, err
	}
	u, err := url.Parse(e.URL)
	if err != nil || u.Scheme != "https" {
		return nil, nil, fmt.Errorf("client: WebTransport URL %q: want https://host:port/path", e.URL)
	}
	wc, err := wtransport.Dial(ctx, e.URL, wtransport.DialOptions{CertHashes: hashes, ListenPacket: listenUDP})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		var c net.Conn = nil
		once.Do(func() { c = wc })
		if c == nil {
			return nil, errors.New("client: the WebTransport stream was used already")
		}
		return c, nil
	}}
	// The stream is TLS already (QUIC's): the upgrade inside it is plain ws://.
	ws := (&url.URL{Scheme: "ws", Host: u.Host, Path: u.Path}).String()
	conn, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		wc.Close()
		return nil, nil, fmt.Errorf("client: WebSocket over WebTransport: %w", err)
	}
	return conn, wc, nil
}
