// Package desync is everything that follows a desync verdict in a match (docs/forensics.md):
// the forensics that narrow it to its tick, subsystem and dump line; the arbiter that
// judges it by re-simulating the recorded stream with the relay's own sim, from the relay's
// shadow of the match; the heal that puts the wrong players back in the right game; and
// the rules against lying peers that decide which of these may happen at all.
//
// Use New to give a match its Work, with the Host the match's actor lends it (who is
// connected, send to one player, record and broadcast, the next tick, run a job off the
// actor) and the match's Config. The actor then calls, on its own goroutine:
//   - Agreed for every agreed checkpoint, Desync for every desync verdict;
//   - Sealed for every sealed frame (the shadow keeps it; steps past their deadline go on);
//   - Evidence and HealResult for a player's answers, Done for a job's result;
//   - End when the match ends, to record what the inquiry and heal under way found.
//
// # Trust
//
// A relay that has the match's sim is the referee: it heals only toward the state its own
// re-simulation computed, and when it cannot judge (its budget for the match is spent,
// every worker is busy, nothing is recorded) it reports, never falling back to the
// majority. Without the sim a heal toward a majority's hash happens only where the
// match's creator allowed it and is marked unverified. No value one peer sends (a tick,
// `through`, a probe id, text) can switch the guard off for others or name anyone a
// forger; peer text becomes one printable line on arrival (lockstep.PeerText).
//
// # Concurrency
//
// Work is not safe for concurrent use: the match's actor owns it. Jobs (judgements,
// shadow advances) run on the relay's bounded pool of workers through Host.Go and come
// back through Done; they share no memory with the Work.
package desync
