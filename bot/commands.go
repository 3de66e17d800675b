package bot

import (
	"time"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// CommandCounts are a connection's commands: how many it sent, and what their acks said.
type CommandCounts struct {
	Sent  int64 `json:"sent"`
	Acked int64 `json:"acked"`
	// Late counts commands acked for a tick after the one targeted.
	Late     int64 `json:"late"`
	Rejected int64 `json:"rejected"`
}

// Add adds o to c.
func (c *CommandCounts) Add(o CommandCounts) {
	c.Sent, c.Acked, c.Late, c.Rejected = c.Sent+o.Sent, c.Acked+o.Acked, c.Late+o.Late, c.Rejected+o.Rejected
}

// CommandLog matches a player connection's commands with their acks (lateness) and with
// the sealed frames that carry them (latency). The zero value is not ready: use
// NewCommandLog. It is not safe for concurrent use.
type CommandLog struct {
	Counts  CommandCounts
	pending map[uint32]pending // by seq
}

type pending struct {
	at     int64 // unix ns of the send
	target uint64
}

// NewCommandLog returns an empty CommandLog.
func NewCommandLog() CommandLog { return CommandLog{pending: map[uint32]pending{}} }

// Sent counts a command; with track, it is waited for in acks and frames.
func (l *CommandLog) Sent(seq uint32, target uint64, at time.Time, track bool) {
	l.Counts.Sent++
	if track {
		l.pending[seq] = pending{at: at.UnixNano(), target: target}
	}
}

// Ack counts a command's ack: accepted (late if for a tick past its target) or rejected.
func (l *CommandLog) Ack(a *pb.CommandAck) {
	if a.GetReject() != pb.Reject_REJECT_UNSPECIFIED {
		l.Counts.Rejected++
		delete(l.pending, a.GetSeq())
		return
	}
	l.Counts.Acked++
	if p, ok := l.pending[a.GetSeq()]; ok && a.GetTick() > p.target {
		l.Counts.Late++
	}
}

// Pending returns how many tracked commands have not landed in a frame yet.
func (l *CommandLog) Pending() int { return len(l.pending) }

// Forget stops waiting for every tracked command (their latency is no longer wanted).
func (l *CommandLog) Forget() { clear(l.pending) }

// Landed calls record with the latency (µs since its send) of each of player's tracked
// commands in f, and stops waiting for them.
func (l *CommandLog) Landed(f lockstep.Frame, player uint32, now time.Time, record func(us int64)) {
	for _, c := range f.Commands {
		if c.Player != player {
			continue
		}
		if p, ok := l.pending[c.Seq]; ok {
			record((now.UnixNano() - p.at) / 1e3)
			delete(l.pending, c.Seq)
		}
	}
}
