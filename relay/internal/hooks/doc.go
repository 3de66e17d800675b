// Package hooks delivers a match's lifecycle to the game's backend as signed webhooks:
// created, started, players joining, leaving, dropping and reconnecting, the relay
// restarting, desyncs (the verdict, the forensics report, the arbitration, the heal) and
// the end, with an outcome the relay verified by re-simulating the match where it has the
// sim (Outcome).
//
// Use Open to start an Outbox, Outbox.Attach to follow a match's stream as its actor
// writes it (the Tap the actor tells of every write), Outbox.Recover after a restart to
// finish what a killed relay left undelivered, Outbox.Deliver (a cluster's) to finish the
// events of an ended match whose node died, and Outbox.Close to stop. Sign and
// CheckSignature are the signature's one definition, for the relay and for tests.
//
// # The stream is the outbox
//
// Every event is derived from one record of the match's replay file — the bytes the
// actor already writes, record before broadcast, so nothing of the match's code calls
// into this package but the Tap's two atomic stores a write. A match's sender (one
// goroutine a match) reads the file behind the actor, turns each lifecycle record into
// an event, and POSTs it until a 2xx acknowledges it; only then does it store, in the
// match's cursor, the offset and seq it has reached, and only once that is stored does it
// send the next event. A relay killed at any moment loses nothing: the restarted relay
// reads each file from its cursor again and delivers what was not acknowledged (at least
// once; the same record gives the same id and seq, so the backend de-duplicates by id).
// Events of a match go out one at a time, in order; matches do not wait for each other.
//
// # Cursors, and who delivers
//
// The cursors are in a Store: files beside the replay files for a single relay, a
// JetStream KV bucket in a cluster (relay/cluster), where every node reads them. Every
// write is a compare-and-set on the revision its writer last saw, and a sender takes its
// match's cursor (writes it back) before it delivers anything: whoever wrote it last
// delivers the match. A sender whose write finds the revision moved on has lost the match
// to another process (a node that claimed it) and stops. So two senders of one match never
// both go on: the one that lost it delivers at most the one event it had sent without
// storing the cursor, which the winner sends again — a duplicate the backend drops by id.
// That duplicate may arrive late (the losing sender was retrying it with backoff), after
// events that follow it: sorted by seq, after de-duplication, nothing is missing or out
// of order. The cursor also keeps the match's URL, so the node that
// takes a match over sends where the match's creator asked.
//
// A match that ends in its lobby has no End record: its end is stored in its cursor
// before the relay announces it (Tap.EndedInLobby), and a single relay's outbox keeps the
// lobby's file (its created and join events) in its directory until they are delivered.
//
// The actor never waits on this package: a Tap publishes how many bytes are written (an
// atomic store) and, for a lifecycle record, wakes the sender through a channel of one
// that it never blocks on (a full channel already holds a wake-up). A backend that is
// down only makes a sender fall behind in the file, which holds everything: no queue
// fills, nothing is dropped.
//
// # Caveats
//
// Webhooks need a replay directory (the outbox is the replay files, and a cluster node's
// copy of a match's stream). A cursor not synced to disk may, after a machine crash,
// send events again (at least once either way).
package hooks
