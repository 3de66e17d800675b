// The match stream: the replay file's bytes kept in memory, the points a reader can start
// at, and how players catching up and spectators are sent it.

package relay

import (
	"os"
	"sort"

	"github.com/tickrelay/tickrelay/replay"
)

// streamLog is the match's stream as bytes: exactly the replay file's bytes. Bytes before
// len never change, so slices of it are shared with writers without copying.
type streamLog struct {
	b    []byte
	file *os.File
}

func (l *streamLog) Write(p []byte) (int, error) {
	if l.file != nil {
		if n, err := l.file.Write(p); err != nil {
			// The file may now end in part of a record (Reopen cuts it); the stream in
			// memory only ever holds whole records.
			return n, err
		}
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *streamLog) Sync() error {
	if l.file != nil {
		return l.file.Sync()
	}
	return nil
}

func (l *streamLog) Close() error {
	if l.file != nil {
		return l.file.Close()
	}
	return nil
}

// streamPoint says that stream bytes [0, off) hold every tick before next: a reader may
// start at off knowing ticks < next are covered. Points are whole-record boundaries.
type streamPoint struct {
	next uint64
	off  int
}

// pointEvery spaces the stream points: 30 ticks (1 s at 30 Hz). It is the granularity of
// resuming and of the spectator delay.
const pointEvery = 30

// startOffset is where the Start record begins in a stream: after the magic and the
// one-byte format version.
const startOffset = len(replay.Magic) + 1

// maxChunk bounds one catch-up message; chunks split at record boundaries.
const maxChunk = 32 << 10

// catchUp sends a player the stream from the Start record, or from where it resumes, to
// the last sealed tick: the same bytes as the replay file.
func (m *match) catchUp(s *session) {
	if err := m.writer.FlushIdle(); err != nil {
		m.recordingFailed(err)
		return
	}
	m.sendStream(s, m.stream.b[m.resumeOffset(s):])
}

// resumeOffset is where s's stream starts: the Start record, or for a connection that
// resumes at tick r, the last point that covers every tick before r (the client skips the
// few ticks it already has).
func (m *match) resumeOffset(s *session) int {
	if s.resumeFrom == nil || *s.resumeFrom == 0 || len(m.points) == 0 {
		return startOffset
	}
	r := *s.resumeFrom
	i := sort.Search(len(m.points), func(i int) bool { return m.points[i].next > r }) - 1
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
	off := startOffset + int(min(*s.resumeOffset, uint64(len(m.stream.b))))
	if off > m.released() {
		return m.resumeOffset(s)
	}
	i := sort.Search(len(m.points), func(i int) bool { return m.points[i].off > off }) - 1
	at := startOffset
	if i >= 0 {
		at = m.points[i].off
	}
	for at < off {
		n, err := replay.SplitRecord(m.stream.b[at:])
		if err != nil {
			break
		}
		at += n
	}
	if at != off {
		return m.resumeOffset(s)
	}
	return off
}

// markPoint records a stream point at the current tick when nothing is pending in the
// writer and the last point is pointEvery ticks back.
func (m *match) markPoint() {
	next := m.sched.NextTick()
	if m.writer.Covered() != next {
		return
	}
	if n := len(m.points); n > 0 && next-m.points[n-1].next < pointEvery {
		return
	}
	m.points = append(m.points, streamPoint{next: next, off: len(m.stream.b)})
}

// released is how far into the stream spectators may read now: everything, or with a
// spectator delay, up to the last point at least delayTicks behind the live tick.
func (m *match) released() int {
	if m.delayTicks == 0 || m.state != StateRunning {
		return len(m.stream.b)
	}
	sealed := m.sched.NextTick()
	if sealed < m.delayTicks {
		return m.points[0].off
	}
	limit := sealed - m.delayTicks
	i := sort.Search(len(m.points), func(i int) bool { return m.points[i].next > limit }) - 1
	return m.points[max(i, 0)].off
}

// sendStream queues a slice of the stream (whole records) for s, as one queue entry the
// writer splits into messages. The slice shares the stream's bytes, which never change
// once written.
func (m *match) sendStream(s *session, b []byte) {
	if len(b) == 0 {
		return
	}
	msg := oneOff(b[:len(b):len(b)])
	msg.stream = true
	s.enqueue(msg)
	msg.release()
}

// spectatorBatch: spectators get the stream every 6 ticks (200 ms at 30 Hz), in one write.
const spectatorBatch = 6

// flushSpectators sends every spectator the stream it may see and has not been sent yet,
// in one write. Spectators at the same position (all but those just joined) share one
// message: the same bytes, queued once per connection.
func (m *match) flushSpectators() {
	if len(m.spectators) == 0 || m.writer == nil {
		return
	}
	if m.state == StateRunning {
		if err := m.writer.FlushIdle(); err != nil {
			m.recordingFailed(err)
			return
		}
		m.markPoint()
	}
	target := m.released()
	var msg *message
	from := -1
	for _, s := range m.spectators {
		if s.sent >= target {
			continue
		}
		if s.sent != from {
			if msg != nil {
				msg.release()
			}
			b := m.stream.b[s.sent:target:target]
			msg, from = oneOff(b), s.sent
			msg.stream = true
		}
		s.enqueue(msg)
		s.sent = target
	}
	if msg != nil {
		msg.release()
	}
}
