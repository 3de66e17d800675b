// Package lockstep implements the transport-free core of tickrelay's relay-clocked
// lockstep: merging every player's commands into one canonical stream of sealed tick
// frames, judging the state checksums peers report, and applying sealed frames to a
// deterministic simulation. It knows nothing of sockets, files, goroutines, logging or
// wall-clock time: it is driven by calls and returns values and errors.
//
// Use Schedule to merge commands on the relay: Submit places a player's command into a
// tick (a late one moves to the next open tick, one too far ahead is refused with a
// *RejectError) and Seal, called on the relay clock, closes the next tick and returns its
// Frame with commands sorted by (player, seq).
//
// Use Judge to turn the Checksum reports of the peers into a Verdict per checkpoint tick:
// agreement, or a desync with the players grouped by hash and the majority named.
//
// Use Peer on every client (and in replay tools) to apply sealed frames to a sim.Sim
// strictly in tick order, and to learn when a checksum is due.
//
// # Ticks, lead and checkpoints
//
// Ticks are numbered from 0 (or from ScheduleOptions.FirstTick when a match resumes).
// The open ticks of a Schedule are NextTick() .. NextTick()+MaxLead-1: a command may
// target at most MaxLead ticks past the last sealed tick, and before the first Seal the
// last sealed tick counts as FirstTick-1. A checkpoint tick is a tick t with
// IsCheckpoint(t, every), i.e. (t+1) % every == 0: peers hash their state after applying
// it.
//
// # Buffer lifetimes
//
// Submit copies the payload it is given; the caller may reuse its buffer at once. The
// Frame that Seal returns, its Commands slice and every Payload in it belong to the
// Schedule and stay valid only until the next Seal: encode the frame (or Frame.Clone it)
// before sealing again. This is what lets Submit and Seal allocate nothing once warm.
// Verdicts own their slices. Peer.Apply does not keep the frame it is given, and a
// sim.Sim must not keep a command's Payload after Step returns.
//
// # Determinism
//
// Equal inputs give equal outputs byte for byte: the order of commands in a frame does
// not depend on the order they were submitted in, verdict groups are sorted (largest
// first, then by ascending hash) and every player list is sorted. No map is iterated.
//
// # Concurrency
//
// Schedule, Judge and Peer are not safe for concurrent use. Each has one owner (the
// match actor on the relay, the session loop on a client) that calls it in order.
package lockstep
