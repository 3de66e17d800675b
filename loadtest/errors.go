package loadtest

import "errors"

var (
	// ErrConfig means a Config cannot be run; the message says which field.
	ErrConfig = errors.New("loadtest: bad config")
	// ErrRelay means the relay under test refused or failed a request of the swarm.
	ErrRelay = errors.New("loadtest: relay request failed")
	// ErrStart means matches did not start in time: connections were refused or too slow.
	ErrStart = errors.New("loadtest: matches did not start")
)
