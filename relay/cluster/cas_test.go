package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedKV answers each Update with the next of its replies (the last one for good),
// as nats.go does (a wrong last sequence wrapped as a revision mismatch), and Get with
// the key at revision at; every other method is absent.
type scriptedKV struct {
	jetstream.KeyValue
	replies []error // nil: stored, at revision+1
	at      uint64
	updates int
	gets    int
}

func (s *scriptedKV) Update(ctx context.Context, _ string, _ []byte, rev uint64) (uint64, error) {
	r := s.replies[min(s.updates, len(s.replies)-1)]
	s.updates++
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if r != nil {
		return 0, fmt.Errorf("%w: %w", r, jetstream.ErrKeyRevisionMismatch)
	}
	return rev + 1, nil
}

func (s *scriptedKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	s.gets++
	return entryAt{rev: s.at}, nil
}

// entryAt is a put of key at revision rev holding val; every other method is absent.
type entryAt struct {
	jetstream.KeyValueEntry
	key string
	val []byte
	rev uint64
}

func (e entryAt) Key() string                     { return e.key }
func (e entryAt) Value() []byte                   { return e.val }
func (e entryAt) Revision() uint64                { return e.rev }
func (e entryAt) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }

func casNode(kv jetstream.KeyValue) *Node {
	return &Node{kv: kv, met: &metrics{publishRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "r"})}}
}

func TestACompareAndSetOnABusyKeyStillAtItsRevisionIsRetried(t *testing.T) {
	t.Parallel()
	kv := &scriptedKV{replies: []error{errBusy, errBusy, nil}, at: 7}
	n := casNode(kv)
	rev, err := n.casUpdate(context.Background(), n.kv, "match.x", []byte("{}"), 7)
	require.NoError(t, err)
	assert.Equal(t, uint64(8), rev)
	assert.Equal(t, 3, kv.updates)
	assert.Equal(t, 2, kv.gets, "each busy refusal checks that the key has not moved on")
	assert.Equal(t, 2.0, counterValue(t, n.met.publishRetries))
}

func TestACompareAndSetOnAKeyThatMovedOnIsAConflict(t *testing.T) {
	t.Parallel()
	for name, refusal := range map[string]error{"busy, but another node's write landed": errBusy, "wrong last sequence": errWrongLast} {
		kv := &scriptedKV{replies: []error{refusal, nil}, at: 9}
		n := casNode(kv)
		_, err := n.casUpdate(context.Background(), n.kv, "match.x", []byte("{}"), 7)
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, jetstream.ErrKeyRevisionMismatch), "%s: %v", name, err)
		assert.Equal(t, 1, kv.updates, "%s: no second try", name)
		assert.Zero(t, counterValue(t, n.met.publishRetries), name)
	}
}

func TestACompareAndSetBusyPastItsContextGivesUp(t *testing.T) {
	t.Parallel()
	kv := &scriptedKV{replies: []error{errBusy}, at: 7}
	n := casNode(kv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := n.casUpdate(ctx, n.kv, "match.x", []byte("{}"), 7)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "previous write in process")
	assert.True(t, errors.Is(err, errBusy), "%v", err)
	assert.Greater(t, kv.updates, 2, "retried while the context allowed")
}

func TestACompareAndSetBusyIsRetriedNoLongerThanThePublishTimeout(t *testing.T) {
	t.Parallel()
	kv := &scriptedKV{replies: []error{errBusy}, at: 7}
	n := casNode(kv)
	n.opts.PublishTimeout = 30 * time.Millisecond
	t0 := time.Now()
	_, err := n.casUpdate(context.Background(), n.kv, "match.x", []byte("{}"), 7)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errBusy), "%v", err)
	assert.Less(t, time.Since(t0), 10*time.Second, "a context without a deadline is not waited out")
}
