// The cluster's names on NATS: subjects, the directory bucket and its keys, the stream.
// Each is defined here and nowhere else.

package cluster

import "github.com/google/uuid"

const (
	// DirectoryBucket is the JetStream KV bucket of the directory: one key per match
	// (matchKey → MatchEntry, written by its owner) and one per node (nodeKey →
	// NodeEntry, the node's heartbeat and load, which is its lease).
	DirectoryBucket = "tickrelay_directory"
	// StreamName is the JetStream stream that holds every match's stream records, one
	// subject per match (matchSubject): the live copy spectators on every node read,
	// the source a failed-over match is rebuilt from, and the archive of finished
	// replays (kept for Options.Archive).
	StreamName = "TICKRELAY_MATCHES"
	// matchSubjects is StreamName's subject filter.
	matchSubjects = "tickrelay.match.*"
	// nodeAPIFormat is the core-NATS request subject of a node's match API
	// (request/reply): the node it names serves the forwarded HTTP request.
	nodeAPIFormat = "tickrelay.node.%s.api"

	// HooksBucket is the JetStream KV bucket of the webhooks' cursors: one key a match
	// with webhooks not all delivered (hookKey → the relay's cursor: the URL, the offset
	// in the match's stream and the seq of the next event), written by the node that
	// delivers them, each write a compare-and-set on the revision it last wrote, so that
	// a node that lost the match (to a claim) cannot write it again and stops.
	HooksBucket = "tickrelay_webhooks"

	matchKeyPrefix = "match."
	nodeKeyPrefix  = "node."
)

// matchSubject is the subject of match id's stream records.
func matchSubject(id uuid.UUID) string { return "tickrelay.match." + id.String() }

// matchKey is match id's directory key.
func matchKey(id uuid.UUID) string { return matchKeyPrefix + id.String() }

// hookKey is match id's key in HooksBucket.
func hookKey(id uuid.UUID) string { return "hook." + id.String() }

// nodeKey is node name's directory key.
func nodeKey(name string) string { return nodeKeyPrefix + name }
