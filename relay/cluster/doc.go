// Package cluster makes tickrelay relays one cluster on NATS JetStream: any node answers
// the match API and takes any join, a match runs on exactly one node, its stream is
// copied to JetStream before any socket gets it, every node serves spectators of every
// match from that copy, a failed node's matches are resumed elsewhere, and finished
// replays stay in JetStream.
//
// Use Connect (or StartEmbedded for development and tests) for the process's one NATS
// connection, NewNode with it, pass the node as relay.Options.Cluster, then Node.Start
// with the relay server and serve Node.Handler instead of the server's own handler.
// docs/cluster.md describes the design: the subjects, the bucket and the stream, who
// writes what, the lease timing and what happens on each failure.
//
// # Names
//
// Every subject, bucket, stream and key is defined once, in names.go.
//
// # Leases
//
// A node's lease is its heartbeat key in the directory bucket, which it rewrites every
// Options.Heartbeat. Every node watches the bucket and judges leases on its own clock: a
// node whose key has not changed for Options.LeaseTTL is dead, and its matches are claimed
// by compare-and-set on their directory entries (KV revision), so exactly one node wins
// each. The stream copy is fenced too: every publish expects the subject's last
// sequence, so a node that lost its match cannot append to it.
//
// # Webhooks
//
// The webhooks' cursors are in a KV bucket of their own (HooksBucket, the relay's
// HookCursors), each write a compare-and-set, so the node that claims a match goes on
// delivering from where the dead node's last acknowledgement left it. A match that ended
// with events undelivered says so in its directory entry (MatchEntry.Hooks), and its
// delivery is claimed like a running match when its node's lease lapses (claimHooks).
package cluster
