// Package client will implement the Go client: dial, join, send commands, receive sealed
// frames, drive a lockstep.Peer and report checksums, reconnect. It is not written yet
// (see the relay-and-client issue).
package client
