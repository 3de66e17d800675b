package loadtest

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

func (c *CommandCounts) add(o CommandCounts) {
	c.Sent, c.Acked, c.Late, c.Rejected = c.Sent+o.Sent, c.Acked+o.Acked, c.Late+o.Late, c.Rejected+o.Rejected
}

// commandLog matches a player connection's commands with their acks (lateness) and with
// the sealed frames that carry them (latency). The zero value is not ready: use
// newCommandLog.
type commandLog struct {
	CommandCounts
	pending map[uint32]pending // by seq
}

type pending struct {
	at     int64 // unix ns of the send
	target uint64
}

func newCommandLog() commandLog { return commandLog{pending: map[uint32]pending{}} }

// sent counts a command; with track, it is waited for in acks and frames.
func (l *commandLog) sent(seq uint32, target uint64, at time.Time, track bool) {
	l.Sent++
	if track {
		l.pending[seq] = pending{at: at.UnixNano(), target: target}
	}
}

func (l *commandLog) ack(a *pb.CommandAck) {
	if a.GetReject() != pb.Reject_REJECT_UNSPECIFIED {
		l.Rejected++
		delete(l.pending, a.GetSeq())
		return
	}
	l.Acked++
	if p, ok := l.pending[a.GetSeq()]; ok && a.GetTick() > p.target {
		l.Late++
	}
}

// landed calls record with the latency (µs since its send) of each of player's tracked
// commands in f, and stops waiting for them.
func (l *commandLog) landed(f lockstep.Frame, player uint32, now time.Time, record func(us int64)) {
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
