// Package relay implements the tickrelay server: the WebSocket endpoint, the match
// registry and HTTP API, and one actor goroutine per match that seals ticks on the relay
// clock with lockstep.Schedule, fans each frame out encoded once, judges checksums with
// lockstep.Judge and records the stream with replay.Writer.
//
// Use New to build a Server, serve Handler (WebSocket and match API) and AdminHandler
// (/metrics, /healthz, /readyz, pprof), create matches with CreateMatch or POST
// /v1/matches, and call Shutdown to end every match cleanly.
//
// # The match actor
//
// One goroutine owns a match: its schedule, judge, replay writer, player slots and the
// work that follows a desync. Sessions hand it events through a bounded inbox; it never
// blocks on a connection. It seals on the relay clock's phases (relay/internal/clock): the matches of
// a phase wake once per tick together. Each sealed tick is written to the replay file
// first (record before broadcast; packed, as spectators get it), then encoded once as a
// Frame into a pooled, reference-counted buffer queued, as the same bytes, on every
// player's bounded send queue. A player whose queue is full is disconnected
// (CloseTooSlow): it may rejoin, but it never holds the others' frames. In a cluster the
// file's bytes are copied to JetStream before any socket gets them (Options.Cluster).
//
// # When peers disagree
//
// A desync verdict starts, on the actor, the forensics that narrow it down by asking the
// players (forensics.go), and, where the relay has the match's sim, the arbiter: a worker
// of a pool of half the cores re-simulates the match from the relay's shadow of it (its
// own state after a recent agreed checkpoint, shadow.go) and names the right group
// (arbiter.go); the players found wrong are then sent the right state to restore (heal.go;
// without a sim, a majority player's state, which they check). No sim runs on the actor.
// docs/forensics.md.
//
// # Spectators
//
// Spectators receive the replay stream itself: on joining, everything from the Start
// record; then, every 6 ticks, whatever was appended, in one message. The bytes a
// spectator receives are the bytes of the replay file.
//
// # Tokens
//
// Joining needs a token signed by the relay (HMAC-SHA256 over match, role, slot and
// expiry). Tokens derive from the configured secret only, so a relay restarted with the
// same secret accepts them. The player id of a command is always the token's slot.
package relay
