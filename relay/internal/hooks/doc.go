// Package hooks delivers a match's lifecycle to the game's backend as signed webhooks:
// created, started, players joining, leaving, dropping and reconnecting, the relay
// restarting, desyncs (the verdict, the forensics report, the arbitration, the heal) and
// the end, with an outcome the relay verified by re-simulating the match where it has the
// sim (Outcome).
//
// Use Open to start an Outbox, Outbox.Attach to follow a match's stream as its actor
// writes it (the Tap the actor tells of every write), Outbox.Recover after a restart to
// finish what a killed relay left undelivered, and Outbox.Close to stop. Sign and
// CheckSignature are the signature's one definition, for the relay and for tests.
//
// # The stream is the outbox
//
// Every event is derived from one record of the match's replay file — the bytes the
// actor already writes, record before broadcast, so nothing of the match's code calls
// into this package but the Tap's two atomic stores a write. A match's sender (one
// goroutine a match) reads the file behind the actor, turns each lifecycle record into
// an event, and POSTs it until a 2xx acknowledges it; only then does it write, in a small
// cursor file beside the replay files, the offset and seq it has reached. A relay killed
// at any moment loses nothing: the restarted relay reads each file from its cursor again
// and delivers what was not acknowledged (at least once; the same record gives the same
// id and seq, so the backend de-duplicates by id). Events of a match go out one at a time,
// in order; matches do not wait for each other.
//
// The actor never waits on this package: a Tap publishes how many bytes are written (an
// atomic store) and, for a lifecycle record, wakes the sender through a channel of one
// that it never blocks on (a full channel already holds a wake-up). A backend that is
// down only makes a sender fall behind in the file, which holds everything: no queue
// fills, nothing is dropped.
//
// # Caveats
//
// Webhooks need a replay directory (the outbox is the replay files). A match that ends in
// its lobby leaves no file: its ended event is delivered from memory, and is lost if the
// relay dies before it is acknowledged. In a cluster each node delivers the events of the
// matches it runs from its own copy of the stream; a node that claims a dead node's match
// has no cursor of it and delivers its events again from the first (same records, same
// ids). A match's own URL is not carried over, and an ended match's undelivered events
// wait for their node's restart; a JetStream outbox would close both, and is not built.
package hooks
