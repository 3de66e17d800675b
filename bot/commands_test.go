package bot

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

func TestCommandLogCountsAcksAndTimesTheFramesThatCarryCommands(t *testing.T) {
	l := NewCommandLog()
	t0 := time.Unix(100, 0)
	l.Sent(1, 10, t0, true)
	l.Sent(2, 10, t0, true)
	l.Sent(3, 11, t0, true)
	l.Sent(4, 12, t0, false) // not tracked: counted only
	l.Ack(&pb.CommandAck{Seq: 1, Tick: 10})
	l.Ack(&pb.CommandAck{Seq: 2, Tick: 11}) // bumped past its target
	l.Ack(&pb.CommandAck{Seq: 3, Reject: pb.Reject_REJECT_TOO_FAR_AHEAD})
	l.Ack(&pb.CommandAck{Seq: 4, Tick: 12})
	assert.Equal(t, CommandCounts{Sent: 4, Acked: 3, Late: 1, Rejected: 1}, l.Counts)

	var got []int64
	f := lockstep.Frame{Tick: 11, Commands: []sim.Command{{Player: 1, Seq: 1}, {Player: 2, Seq: 2}, {Player: 2, Seq: 3}}}
	l.Landed(f, 2, t0.Add(105*time.Millisecond), func(us int64) { got = append(got, us) })
	assert.Equal(t, []int64{105000}, got, "seq 2 of player 2 (seq 3 was rejected; player 1's are not ours)")
	assert.Len(t, l.pending, 1, "seq 1 is still awaited")

	var sum CommandCounts
	sum.Add(l.Counts)
	sum.Add(l.Counts)
	assert.Equal(t, CommandCounts{Sent: 8, Acked: 6, Late: 2, Rejected: 2}, sum)
}
