//go:build !js

package client

import (
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
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
