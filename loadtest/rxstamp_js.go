//go:build js

package loadtest

import "github.com/coder/websocket"

// stampedDialOptions: a browser's WebSocket has no socket to stamp.
func stampedDialOptions(*rxStamp) *websocket.DialOptions { return nil }
