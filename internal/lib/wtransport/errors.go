package wtransport

import "errors"

var (
	// ErrClosed: the listener was closed.
	ErrClosed = errors.New("wtransport: listener closed")
	// ErrDatagramTooLarge: the datagram does not fit the path's largest QUIC packet.
	ErrDatagramTooLarge = errors.New("wtransport: datagram too large for the path")
	// ErrNoStream: the session's peer opened no stream within the accept timeout.
	ErrNoStream = errors.New("wtransport: the peer opened no stream in time")
	// ErrCertHash: the server's certificate matches none of the hashes the client pins.
	ErrCertHash = errors.New("wtransport: the server's certificate matches no pinned hash")
)
