//go:build js

package client

import "github.com/coder/websocket"

// dialOptions: in a browser (js/wasm) the WebSocket API decides compression and TLS.
func dialOptions(*Options) *websocket.DialOptions { return &websocket.DialOptions{} }
