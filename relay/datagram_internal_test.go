package relay

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type noDatagrams struct{}

func (noDatagrams) SendDatagramNoWait([]byte) bool { return true }
func (noDatagrams) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A player on WebTransport sends each command twice, as a datagram and on the stream:
// the first copy of each seq is handled, in seq order, and the other dropped unanswered.
func TestACommandIsHandledOnceWhicheverCopyComesFirstAndInSeqOrder(t *testing.T) {
	t.Parallel()
	srv, err := New(Options{TokenSecret: []byte("0123456789abcdef0123456789abcdef")}, nil)
	require.NoError(t, err)
	m := &match{srv: srv}
	wt := &session{dg: noDatagrams{}}
	slot := &slotState{}
	steps := []struct {
		seq    uint32
		dgram  bool
		handle bool
		why    string
	}{
		{2, true, false, "a datagram ahead of seq 1 waits for the stream"},
		{1, false, true, "the stream's seq 1"},
		{1, true, false, "seq 1's datagram, second"},
		{2, true, true, "seq 2's datagram, next in order"},
		{2, false, false, "seq 2's stream copy, second"},
		{4, true, false, "a datagram past a lost seq 3"},
		{3, false, true, "the stream's seq 3"},
		{4, false, true, "the stream's seq 4"},
		{4, true, false, "seq 4's late datagram"},
	}
	for _, st := range steps {
		assert.Equal(t, st.handle, m.dedupe(event{s: wt, seq: st.seq, dgram: st.dgram}, slot), st.why)
	}
	ws := &session{}
	assert.True(t, m.dedupe(event{s: ws, seq: 1}, &slotState{seenSeq: 5, hasSeen: true}), "a WebSocket player's commands are the match's to judge, duplicates included")
}
