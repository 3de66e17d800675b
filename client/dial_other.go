//go:build !js

package client

import "github.com/coder/websocket"

// dialOptions turns compression off: frames are tiny and per-message deflate would only
// cost CPU and memory on both ends.
func dialOptions(o *Options) *websocket.DialOptions {
	return &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled, HTTPClient: o.HTTPClient}
}
