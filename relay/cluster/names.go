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

	matchKeyPrefix = "match."
	nodeKeyPrefix  = "node."
)

// matchSubject is the subject of match id's stream records.
func matchSubject(id uuid.UUID) string { return "tickrelay.match." + id.String() }

// matchKey is match id's directory key.
func matchKey(id uuid.UUID) string { return matchKeyPrefix + id.String() }

// nodeKey is node name's directory key.
func nodeKey(name string) string { return nodeKeyPrefix + name }
