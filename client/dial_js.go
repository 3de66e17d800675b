//go:build js

package client

import "github.com/coder/websocket"

// dialOptions: in a browser (js/wasm) the WebSocket API decides compression itself.
func dialOptions() *websocket.DialOptions { return &websocket.DialOptions{} }
