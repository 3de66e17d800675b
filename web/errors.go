package web

import "errors"

// ErrBadURL: the relay's WebSocket URL cannot be turned into page links.
var ErrBadURL = errors.New("web: the WebSocket URL must be ws:// or wss://host/…/v1/ws")
