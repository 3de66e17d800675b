package cluster_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

// Matches writing their streams back to back, as fast as JetStream acknowledges: no
// write is refused. A clustered stream acknowledges a write before it clears the
// subject's in-process mark, so under load the next write can find the subject busy
// ("wrong last sequence" with no sequence); the publisher used to take that for another
// node's write and stop the match as moved. The window is narrow: this caught it with
// the CPUs kept busy (3 refusals in 2 runs), rarely on an idle machine; publish_test.go
// checks each answer's handling deterministically.
func TestStreamCopiesWrittenBackToBackAreNeverRefused(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	n := c.nodes[0].node
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			w := n.Record(uuid.New())
			for i := range 600 {
				if _, err := w.Write(fmt.Appendf(nil, "match %d, record %d", g, i)); err != nil {
					assert.NoError(t, err, "match %d, write %d", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Fencing: once another node has written to a match's stream (it claimed the match),
// the old owner's next write is refused and the match stops there as moved.
func TestAWriteAfterAnotherNodesWriteIsRefusedAsMoved(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 2)
	id := uuid.New()
	old := c.nodes[0].node.Record(id)
	_, err := old.Write([]byte("start"))
	require.NoError(t, err)
	_, err = c.nodes[1].node.Record(id).Write([]byte("the claimer's first record"))
	require.NoError(t, err)
	_, err = old.Write([]byte("the old owner's next record"))
	require.ErrorIs(t, err, relay.ErrMoved)
	assert.Contains(t, err.Error(), "expected the subject's last sequence at")
	_, err = old.Write([]byte("and after"))
	require.ErrorIs(t, err, relay.ErrMoved, "the failure sticks")
}
