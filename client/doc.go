// Package client is the Go client of a tickrelay relay: dial, join with a token, send
// commands, receive sealed frames, and run the match's simulation through a
// lockstep.Peer, which reports state checksums to the relay on the cadence by itself.
//
// Use Dial with a player token to play: Send targets the right tick with the relay's
// suggested input delay, OnTick runs after every sealed tick (decide your next commands
// there), OnAck says where each command landed. Use Dial with a spectator token to
// watch: the stream arrives from tick 0, and OnStream hands over its records, which are
// the replay file's records.
//
// # Concurrency
//
// Each Session runs a reader goroutine; every callback runs on it, in stream order, so
// reading Sim from a callback is safe. Send and SendAt may be called from any goroutine.
package client
