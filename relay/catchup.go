// The match stream's points a reader can start at, and how players catching up and
// spectators are sent the stream.

package relay

import (
	"sort"

	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// streamPoint says that stream bytes [0, off) hold every tick before next: a reader may
// start at off knowing ticks < next are covered. Points are whole-record boundaries
// followed by a whole frame or idle record, never a packed one (the writer is anchored
// at each), so a reader that starts there knows every tick it reads.
type streamPoint struct {
	next uint64
	off  int
}

// streamPoints are a match's stream points, ascending by tick and offset: where a reader
// may start (resuming, catching up, the spectator delay). The live stream, a mirror and
// a resumed file note them by one rule (due) and keep them bounded (add).
type streamPoints []streamPoint

// due reports whether a point for tick next is due: none yet, or the last pointEvery
// ticks or more back.
func (ps streamPoints) due(next uint64) bool {
	n := len(ps)
	return n == 0 || next-ps[n-1].next >= pointEvery
}

// atTick is the index of the last point that covers every tick before t (its next is at
// most t), or -1 if none does.
func (ps streamPoints) atTick(t uint64) int {
	return sort.Search(len(ps), func(i int) bool { return ps[i].next > t }) - 1
}

// atOffset is the index of the last point at or before stream offset off, or -1.
func (ps streamPoints) atOffset(off int) int {
	return sort.Search(len(ps), func(i int) bool { return ps[i].off > off }) - 1
}

// add notes a point after the others, thinning the old ones once there are maxPoints.
func (ps *streamPoints) add(p streamPoint) {
	*ps = append(*ps, p)
	if len(*ps) >= maxPoints {
		*ps = thinPoints(*ps)
	}
}

// pointEvery spaces the stream points: 30 ticks (1 s at 30 Hz). It is the granularity of
// resuming and of the spectator delay.
const pointEvery = 30

// startOffset is where the Start record begins in a stream: after the magic and the
// one-byte format version.
const startOffset = replay.HeaderSize

// maxChunk bounds one catch-up message; chunks split at record boundaries.
const maxChunk = 32 << 10

// catchUp sends a player the stream from the Start record, or from where it resumes, to
// the last sealed tick: the same bytes as the replay file.
func (m *match) catchUp(s *session) {
	if err := m.writer.FlushIdle(); err != nil {
		m.recordingFailed(err)
		return
	}
	m.sendStream(s, m.resumeOffset(s), m.stream.size)
}

// resumeOffset is where s's stream starts: the Start record, or for a connection that
// resumes at tick r, the last point that covers every tick before r (the client skips the
// few ticks it already has).
func (m *match) resumeOffset(s *session) int {
	if s.resumeFrom == nil || *s.resumeFrom == 0 || len(m.points) == 0 {
		return startOffset
	}
	i := m.points.atTick(*s.resumeFrom)
	if i < 0 {
		return startOffset
	}
	return m.points[i].off
}

// spectatorOffset is where a joining spectator's stream starts: exactly where it says it
// stopped (resume_offset), if that is a record boundary it was released; else as for a
// player.
func (m *match) spectatorOffset(s *session) int {
	if s.resumeOffset == nil {
		return m.resumeOffset(s)
	}
	off := startOffset + int(min(*s.resumeOffset, uint64(m.stream.size)))
	if off > m.released() {
		return m.resumeOffset(s)
	}
	b, err := m.stream.read(m.pointBefore(off), off)
	if err != nil || !stream.Whole(b) {
		return m.resumeOffset(s)
	}
	return off
}

// maxResumeOffset bounds the resume_offset a spectator may wait for (1 TiB of stream).
const maxResumeOffset = 1 << 40

// pointBefore is the last stream point at or before stream offset off (a record boundary
// from which the records to off can be checked), or the Start record.
func (m *match) pointBefore(off int) int {
	i := m.points.atOffset(off)
	if i < 0 {
		return startOffset
	}
	return m.points[i].off
}

// markPoint records a stream point at the current tick when nothing is pending in the
// writer and the last point is pointEvery ticks back.
func (m *match) markPoint() {
	if next := m.sched.NextTick(); m.writer.Covered() == next && m.points.due(next) {
		m.addPoint(next)
	}
}

// addPoint notes a point at the stream's end, where ticks before next are covered, and
// anchors the writer there: the next tick record is a whole frame or an idle record, so a
// reader that starts at the point can place it. Every live point is noted through here.
func (m *match) addPoint(next uint64) {
	// The point follows a crc record: a reader that starts there checks every block.
	if err := m.writer.Anchor(); err != nil {
		m.recordingFailed(err)
		return
	}
	m.points.add(streamPoint{next: next, off: m.stream.size})
}

// maxPoints bounds a match's stream points (16 KiB): a long match keeps them dense where
// they matter (recent ticks: resuming, the spectator delay) and thins out the old ones.
const maxPoints = 1024

// thinPoints drops every other point of the older half, keeping the first point.
// Repeated, it leaves a density that falls off with age.
func thinPoints(p streamPoints) streamPoints {
	half := len(p) / 2
	kept := p[:1]
	for i := 2; i < half; i += 2 {
		kept = append(kept, p[i])
	}
	return append(kept, p[half:]...)
}

// released is how far into the stream spectators may read now: everything, or with a
// spectator delay, up to the last point at least delayTicks behind the live tick.
func (m *match) released() int {
	if m.delayTicks == 0 || m.state != StateRunning {
		return m.stream.size
	}
	sealed := m.sealedTicks()
	if sealed < m.delayTicks {
		return m.points[0].off
	}
	return m.points[max(m.points.atTick(sealed-m.delayTicks), 0)].off
}

// sendStream queues stream bytes [from, to) for s as one queue entry, which the writer
// splits into messages: a slice of the tail in memory, or a range it reads from the file.
func (m *match) sendStream(s *session, from, to int) {
	if from >= to {
		return
	}
	msg := m.stream.message(from, to)
	s.enqueue(msg)
	msg.release()
}

// spectatorBatch: spectators get the stream every 6 ticks (200 ms at 30 Hz), in one write.
const spectatorBatch = 6

// flushSpectators sends every spectator the stream it may see and has not been sent yet,
// in one write. Spectators at the same position (all but those just joined) share one
// message: the same bytes, queued once per connection.
func (m *match) flushSpectators() {
	// In a cluster the stream goes to other nodes' spectators too: idle runs are flushed
	// at every batch, watched here or not.
	if (len(m.spectators) == 0 && m.stream.copy == nil) || (m.writer == nil && m.mirror == nil) {
		return
	}
	if m.state == StateRunning && m.mirror == nil {
		if err := m.writer.FlushIdle(); err != nil {
			m.recordingFailed(err)
			return
		}
		m.markPoint()
		if m.state != StateRunning {
			return // the recording failed and the match ended
		}
	}
	target := m.released()
	var msg *message
	from := -1
	keep := target
	for _, s := range m.spectators {
		if s.awaitSent {
			if s.sent > target {
				keep = min(keep, target)
				continue
			}
			s.awaitSent = false
			s.sent = m.spectatorOffset(s) // its byte, if a record boundary
		}
		if s.sent < target {
			if s.sent != from {
				if msg != nil {
					msg.release()
				}
				msg, from = m.stream.message(s.sent, target), s.sent
			}
			s.enqueue(msg)
			s.sent = target
		}
		keep = min(keep, s.sent)
	}
	if msg != nil {
		msg.release()
	}
	// Memory keeps only what spectators have not been sent yet.
	m.stream.trim(keep)
}
