//go:build js

package client

import (
	"context"
	"errors"
	"net"

	"github.com/coder/websocket"
)

// dialOptions: in a browser (js/wasm) the WebSocket API decides compression and TLS.
func dialOptions(*Options) *websocket.DialOptions { return &websocket.DialOptions{} }

// dialWebTransport: a browser's WebTransport is the TypeScript client's (web pages);
// the Go client in a browser stays on WebSocket.
func dialWebTransport(context.Context, *WebTransportEndpoint, func() (net.PacketConn, error)) (*websocket.Conn, datagrams, error) {
	return nil, nil, errors.New("client: no WebTransport in a js/wasm build")
}
