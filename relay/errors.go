package relay

import "errors"

// The kinds of error the relay's Go API returns, each mapped to one HTTP status by the
// match API (see Handler). Errors wrap them: test with errors.Is.
var (
	// ErrInvalid means a request is malformed or asks for what the relay cannot do (a
	// bad or disallowed sim name, params or a player count a known sim refuses, an
	// option out of range): 400. The message says what to change.
	ErrInvalid = errors.New("relay: invalid request")
	// ErrUnauthorized means the match API's admin key is missing or wrong: 401.
	ErrUnauthorized = errors.New("relay: missing or wrong admin key")
	// ErrBadToken means a join token sent to GET /v1/players is missing, wrong or
	// expired: 401.
	ErrBadToken = errors.New("relay: missing, wrong or expired join token")
	// ErrNotFound means no match has that id on this relay (never, or ended long enough
	// ago to be forgotten): 404.
	ErrNotFound = errors.New("relay: no such match")
	// ErrEnded means the match already ended, so it cannot be ended again: 409.
	ErrEnded = errors.New("relay: the match has ended")
	// ErrFull means the relay runs as many matches as it may: 503 with Retry-After.
	// Try again later, or another relay.
	ErrFull = errors.New("relay: at its match limit")
	// ErrClosing means the server is shutting down and takes no new matches or
	// connections: 503 with Retry-After.
	ErrClosing = errors.New("relay: shutting down")
	// ErrOverloaded means the relay sealed a tick later than Options.MaxTickLateness
	// within the last overloadHold: it is behind its clock, and a new match would make
	// every match's latency grow: 503 with Retry-After.
	ErrOverloaded = errors.New("relay: behind its clock (ticks sealed late); not taking new matches")
	// ErrUnavailable means the relay cannot serve the request for a passing reason — in a
	// relay cluster, the node that runs the match (or was chosen for a new one) did not
	// answer, or the cluster's directory could not be read: 503 with Retry-After. Try
	// again; a failed node's matches move within the lease.
	ErrUnavailable = errors.New("relay: unavailable for now")
	// ErrInternal means the relay failed at its own part of a request that was fine (it
	// could not create the match's replay file, or copy its stream to the cluster): 500.
	ErrInternal = errors.New("relay: internal error")
)
