package cluster

import "errors"

var (
	// ErrNoNodes means no live relay node is in the directory to place a match on.
	ErrNoNodes = errors.New("cluster: no live relay node to place the match on")
	// ErrNoReplay means JetStream holds no stream for the match (unknown, never started,
	// or past the archive's retention).
	ErrNoReplay = errors.New("cluster: no stream for this match in JetStream")
	// ErrConnect means the NATS connection could not be opened: its options (a file that
	// cannot be read) or the servers (unreachable, refusing the credentials or the TLS).
	ErrConnect = errors.New("cluster: connecting to NATS")
	// ErrOptions means the node's options are incomplete.
	ErrOptions = errors.New("cluster: bad options")
)
