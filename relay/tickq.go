// The tick queue: how a running match takes its players' commands and checksums.

package relay

import (
	"sync"
	"sync/atomic"
)

// tickQueue holds the commands and checksums that readers hand a running match. The actor
// takes them all at each of its wake-ups, before sealing, and before any other event: so
// a command costs its reader a lock and an append, not a wake-up of the actor between
// seals. A command's ack rode with the next frame before (holdAck), and still does; its
// tick is the same, since the actor takes the queue before it seals.
//
// Order, per session, is what the inbox gave: a reader uses the queue only while the
// match runs on its clock (open) and none of its earlier commands or checksums is still
// in the inbox (session.inboxed), and the actor takes the queue before it handles a
// join, leave or end, so a command is never placed after its session's later events.
type tickQueue struct {
	open atomic.Bool // the actor takes from the queue: the match runs on its clock
	mu   sync.Mutex
	evs  []event
}

// offer queues ev, a command or checksum, if the queue is open and its session has none
// in the inbox; false means it goes through the inbox.
func (q *tickQueue) offer(ev event) bool {
	if !q.open.Load() || ev.s.inboxed.Load() != 0 {
		return false
	}
	q.mu.Lock()
	q.evs = append(q.evs, ev)
	q.mu.Unlock()
	return true
}

// take returns what the queue holds, in arrival order, leaving it spare (emptied) to fill.
func (q *tickQueue) take(spare []event) []event {
	q.mu.Lock()
	evs := q.evs
	q.evs = spare[:0]
	q.mu.Unlock()
	return evs
}

// postTicked hands the actor a command or checksum: through the tick queue while it is
// open, else through the inbox (counted in the session's inboxed until handled).
func (m *match) postTicked(ev event) {
	if m.ticked.offer(ev) {
		return
	}
	ev.s.inboxed.Add(1)
	if !m.post(ev) {
		ev.s.inboxed.Add(-1) // the match has ended
	}
}

// takeTicked handles the commands and checksums in the tick queue, in arrival order.
func (m *match) takeTicked() {
	evs := m.ticked.take(m.tickSpare)
	for i := range evs {
		m.handleTicked(evs[i])
		evs[i] = event{} // no payload or session kept alive by the spare
	}
	m.tickSpare = evs[:0]
}

// handleTicked handles one command or checksum, from the tick queue or the inbox.
func (m *match) handleTicked(ev event) {
	if ev.kind == evCommand {
		m.command(ev)
	} else {
		m.checksum(ev)
	}
}
