package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

// scriptedJS answers each Publish with the next of its replies (the last one for good);
// every other JetStream method is absent.
type scriptedJS struct {
	jetstream.JetStream
	replies []error // nil: acknowledged at sequence seq
	seq     uint64
	calls   int
}

func (s *scriptedJS) Publish(ctx context.Context, _ string, _ []byte, _ ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	r := s.replies[min(s.calls, len(s.replies)-1)]
	s.calls++
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r != nil {
		return nil, r
	}
	return &jetstream.PubAck{Stream: StreamName, Sequence: s.seq}, nil
}

// lastMsg answers GetLastMsgForSubject with msg.
type lastMsg struct {
	jetstream.Stream
	msg   *jetstream.RawStreamMsg
	calls int
}

func (l *lastMsg) GetLastMsgForSubject(context.Context, string) (*jetstream.RawStreamMsg, error) {
	l.calls++
	return l.msg, nil
}

var (
	errBusy      = &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}
	errWrongLast = &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 12"}
)

// testPublisher is a publisher of one match on a node with js and st, that expects the
// subject's last sequence at 10.
func testPublisher(js jetstream.JetStream, st jetstream.Stream, timeout time.Duration) *publisher {
	n := &Node{js: js, stream: st, opts: Options{PublishTimeout: timeout}, met: &metrics{
		publish:         prometheus.NewHistogram(prometheus.HistogramOpts{Name: "p"}),
		publishFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "f"}),
		publishRetries:  prometheus.NewCounter(prometheus.CounterOpts{Name: "r"}),
	}}
	return &publisher{n: n, id: uuid.New(), subject: "s", last: 10, known: true}
}

func TestABusySubjectIsRetriedUntilTheWriteLands(t *testing.T) {
	t.Parallel()
	js := &scriptedJS{replies: []error{errBusy, errBusy, nil}, seq: 11}
	st := &lastMsg{}
	p := testPublisher(js, st, time.Second)
	n, err := p.Write([]byte("frame"))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.Equal(t, uint64(11), p.last, "the next write expects the acknowledged sequence")
	assert.Equal(t, 3, js.calls)
	assert.Zero(t, st.calls, "a busy subject says nothing of who wrote: no lookup")
	assert.Equal(t, 2.0, counterValue(t, p.n.met.publishRetries))
	assert.Zero(t, counterValue(t, p.n.met.publishFailures))
}

func TestAnotherNodesWriteStopsTheMatchAtOnce(t *testing.T) {
	t.Parallel()
	js := &scriptedJS{replies: []error{errWrongLast}}
	st := &lastMsg{msg: &jetstream.RawStreamMsg{Sequence: 12, Data: []byte("frame")}}
	p := testPublisher(js, st, time.Second)
	_, err := p.Write([]byte("frame"))
	require.ErrorIs(t, err, relay.ErrMoved)
	assert.Contains(t, err.Error(), "expected the subject's last sequence at 10")
	assert.Equal(t, 1, js.calls, "no retry")
	assert.Zero(t, st.calls, "no earlier attempt of ours could have landed, identical bytes or not")
	_, err = p.Write([]byte("next"))
	require.ErrorIs(t, err, relay.ErrMoved, "the failure sticks")
	assert.Equal(t, 1, js.calls)
}

func TestAnAttemptWhoseAckWasLostCountsAsWritten(t *testing.T) {
	t.Parallel()
	js := &scriptedJS{replies: []error{nats.ErrNoResponders, errWrongLast}}
	st := &lastMsg{msg: &jetstream.RawStreamMsg{Sequence: 12, Data: []byte("frame")}}
	p := testPublisher(js, st, time.Second)
	_, err := p.Write([]byte("frame"))
	require.NoError(t, err)
	assert.Equal(t, uint64(12), p.last)
	assert.Equal(t, 1, st.calls)

	// The same, but the subject's last message is not ours: another node wrote.
	js = &scriptedJS{replies: []error{nats.ErrNoResponders, errWrongLast}}
	st = &lastMsg{msg: &jetstream.RawStreamMsg{Sequence: 12, Data: []byte("someone else's")}}
	p = testPublisher(js, st, time.Second)
	_, err = p.Write([]byte("frame"))
	require.ErrorIs(t, err, relay.ErrMoved)
}

func TestASubjectBusyPastTheTimeoutStopsTheMatchAndSaysSo(t *testing.T) {
	t.Parallel()
	js := &scriptedJS{replies: []error{errBusy}}
	p := testPublisher(js, &lastMsg{}, 30*time.Millisecond)
	_, err := p.Write([]byte("frame"))
	require.ErrorIs(t, err, relay.ErrMoved)
	assert.Contains(t, err.Error(), "still had the subject's previous write in process")
	assert.True(t, errors.Is(err, errBusy))
	assert.Greater(t, js.calls, 2, "retried, sooner at first")
	assert.Equal(t, 1.0, counterValue(t, p.n.met.publishFailures))
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
