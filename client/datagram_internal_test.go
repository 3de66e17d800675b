package client

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream/dgram"
)

// sent records the seqs of each command datagram a session hands to its connection.
type sent struct{ datagrams [][]uint32 }

func (s *sent) SendDatagramNoWait(b []byte) bool {
	var seqs []uint32
	if err := dgram.DecodeCommands(b, 1<<10, func(c *pb.Command) { seqs = append(seqs, c.GetSeq()) }); err != nil {
		panic(err)
	}
	s.datagrams = append(s.datagrams, seqs)
	return true
}

func (s *sent) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *sent) last() []uint32 { return s.datagrams[len(s.datagrams)-1] }

// A command goes with every earlier one the relay has not acked, and again on a frames
// datagram until it is acked — but not twice within the wait, and never one the relay
// said it has.
func TestACommandIsResentWithTheNextAndEachTickUntilTheRelayAcksIt(t *testing.T) {
	var u unacked
	dg := &sent{}
	u.add(&pb.Command{Seq: 1}, dg)
	u.add(&pb.Command{Seq: 2}, dg)
	assert.Equal(t, [][]uint32{{1}, {1, 2}}, dg.datagrams, "each datagram carries the unacked commands before it")

	u.ack(0, time.Hour, dg)
	assert.Len(t, dg.datagrams, 2, "not again before the wait is out")
	u.ack(0, 0, dg)
	assert.Equal(t, []uint32{1, 2}, dg.last(), "resent while the relay acks neither")
	u.ack(1, 0, dg)
	assert.Equal(t, []uint32{2}, dg.last(), "an acked command is never resent")
	u.ack(1, 0, dg)
	assert.Equal(t, []uint32{2}, dg.last())
	n := len(dg.datagrams)
	u.ack(2, 0, dg)
	u.ack(0, 0, dg) // an older ack (the stream's, behind the datagrams) takes nothing back
	assert.Len(t, dg.datagrams, n, "nothing left to resend")
	u.add(&pb.Command{Seq: 3}, dg)
	assert.Equal(t, []uint32{3}, dg.last())
}

// However many the relay has not acked, a datagram carries the newest MaxCommands: the
// older ones are the stream's to deliver.
func TestUnackedCommandsAreBoundedByWhatADatagramCarries(t *testing.T) {
	var u unacked
	dg := &sent{}
	for seq := uint32(1); seq <= 3*dgram.MaxCommands; seq++ {
		u.add(&pb.Command{Seq: seq, Payload: make([]byte, 40)}, dg)
	}
	last := dg.last()
	require.Len(t, last, dgram.MaxCommands)
	assert.Equal(t, uint32(3*dgram.MaxCommands), last[len(last)-1])
	assert.Len(t, u.cmds, dgram.MaxCommands)

	// A command over the budget alone is not sent: the stream has it.
	var big unacked
	dg = &sent{}
	big.add(&pb.Command{Seq: 1, Payload: make([]byte, dgram.Budget)}, dg)
	assert.Empty(t, dg.datagrams)
	// Unacked commands that together are over the budget: the newest that fit go.
	big.add(&pb.Command{Seq: 2, Payload: make([]byte, 300)}, dg)
	for seq := uint32(3); seq <= 8; seq++ {
		big.add(&pb.Command{Seq: seq, Payload: make([]byte, 300)}, dg)
	}
	assert.Equal(t, []uint32{6, 7, 8}, dg.last(), "the newest three of 300 bytes fit in 1,100")

	// Sent from two goroutines, seqs may arrive out of order: each goes in its place.
	var u2 unacked
	dg = &sent{}
	u2.add(&pb.Command{Seq: 2}, dg)
	u2.add(&pb.Command{Seq: 1}, dg)
	assert.Equal(t, []uint32{1, 2}, dg.last())
}
