package web

import "errors"

// ErrPage: a page of the embedded app does not render (a broken layout or a missing body
// in static/: a build mistake, never user input).
var ErrPage = errors.New("web: a page of the app does not render")

// ErrBadURL: the relay's WebSocket URL cannot be turned into page links.
var ErrBadURL = errors.New("web: the WebSocket URL must be ws:// or wss://host/…/v1/ws")
