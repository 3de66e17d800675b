//go:build !js

package loadtest

import "github.com/coder/websocket"

// stampedDialOptions dials a WebSocket whose connection's reads update st.
func stampedDialOptions(st *rxStamp) *websocket.DialOptions {
	return &websocket.DialOptions{HTTPClient: stampedClient(st, nil)}
}
