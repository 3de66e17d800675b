package relay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestACommandTakesTheTickQueueOnlyWhileOpenAndNoneOfItsSessionsIsInTheInbox(t *testing.T) {
	t.Parallel()
	var q tickQueue
	s, other := &session{}, &session{}
	cmd := func(s *session, seq uint32) event { return event{kind: evCommand, s: s, seq: seq} }

	assert.False(t, q.offer(cmd(s, 1)), "closed (lobby, resuming, ended): the inbox")
	q.open.Store(true)
	s.inboxed.Add(1) // seq 1 went to the inbox and is not handled yet
	assert.False(t, q.offer(cmd(s, 2)), "behind its own command in the inbox")
	assert.True(t, q.offer(cmd(other, 1)), "another session is not held back")
	s.inboxed.Add(-1) // the actor handled seq 1
	assert.True(t, q.offer(cmd(s, 3)))
	assert.True(t, q.offer(cmd(s, 4)))

	evs := q.take(nil)
	seqs := []uint32{}
	for _, ev := range evs {
		seqs = append(seqs, ev.seq)
	}
	assert.Equal(t, []uint32{1, 3, 4}, seqs, "in arrival order")
	assert.Empty(t, q.take(evs[:0]), "taken once")
}
