// Players on WebTransport who take their live frames from the frames datagrams alone
// (Join.datagram_frames): the relay leaves those frames off their stream, keeps the
// last few seconds of frame records, and sends from them what such a player asks for
// (Fetch) and, before End, the last second of them — so a lost datagram costs a round
// trip on the stream, and the last ticks of a match are never lost with their datagrams.

package relay

import (
	"fmt"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// FetchWindow is how far back a Fetch reaches, and EndWindow how much of the match's
// end goes on the stream before End (tickrelay.v1.Join.datagram_frames): more than a
// client waits for a frame before it fetches (200 ms or 6 ticks) and the round trip of
// its fetch.
const (
	FetchWindow = 4 // seconds
	EndWindow   = 1 // second
)

// recentFrames are the players' records of the last sealed frames, a ring; warm, it
// allocates nothing.
type recentFrames struct {
	recs  [][]byte // recs[t % len(recs)] is tick t's, for t in [first, next)
	first uint64
	next  uint64
}

func newRecentFrames(tickRate int) *recentFrames {
	return &recentFrames{recs: make([][]byte, FetchWindow*tickRate)}
}

// add keeps rec as tick's record; ticks come in order.
func (r *recentFrames) add(tick uint64, rec []byte) {
	if tick != r.next {
		r.first = tick // a gap (a resumed match): the ring starts again
	}
	i := tick % uint64(len(r.recs))
	r.recs[i] = append(r.recs[i][:0], rec...)
	r.next = tick + 1
	if r.next-r.first > uint64(len(r.recs)) {
		r.first = r.next - uint64(len(r.recs))
	}
}

// appendFrom appends the records of ticks from on to dst; false when from is older than
// the ring holds.
func (r *recentFrames) appendFrom(dst []byte, from uint64) ([]byte, bool) {
	if from < r.first {
		return dst, false
	}
	for t := from; t < r.next; t++ {
		dst = append(dst, r.recs[t%uint64(len(r.recs))]...)
	}
	return dst, true
}

// fetch answers a player's Fetch: its frames from ev.tick on, on its stream, but none
// this connection's stream carried already (a stream loses nothing: asking again only
// means the answer is on its way), so that fetches cost at most the frames once. A tick
// older than the window drops the connection as too slow, and the client resumes.
func (m *match) fetch(ev event) {
	s := ev.s
	if m.liveSlot(s) == nil || m.recent == nil || m.state != StateRunning {
		return
	}
	from := max(ev.tick, s.fetchedTo)
	b, ok := m.recent.appendFrom(nil, from)
	if !ok {
		if s.kick(CloseTooSlow, fmt.Sprintf("asked for frames from tick %d, older than the last %d s the relay keeps: resume from there", ev.tick, FetchWindow)) {
			m.srv.metrics.slowDrops.Inc()
		}
		return
	}
	if len(b) > 0 && s.enqueueBytes(b) {
		s.fetchedTo = m.recent.next
	}
}

// enqueueBytes queues b for s alone, dropping the caller's reference as every sender
// does (sendBytes).
func (s *session) enqueueBytes(b []byte) bool {
	msg := oneOff(b)
	defer msg.release()
	return s.enqueue(msg)
}

// sendsFrames says whether the match puts its live frames on s's stream: not for a
// player who takes them as datagrams.
func (s *session) sendsFrames() bool { return !s.datagramFrames }

// backfill sends, before End, the last EndWindow's frames to every player who takes
// frames as datagrams: whatever its last datagrams lost, it ends with every tick.
func (m *match) backfill() {
	if m.recent == nil {
		return
	}
	var b []byte
	for i := range m.slots {
		s := m.slots[i].live
		if s == nil || s.sendsFrames() {
			continue
		}
		if b == nil {
			from := max(m.recent.first, m.recent.next-min(m.recent.next, uint64(EndWindow*m.opts.TickRate)))
			b, _ = m.recent.appendFrom(nil, from)
		}
		if len(b) > 0 {
			s.enqueueBytes(b) // the same bytes to each: the client skips what it applied already
		}
	}
}

// fetchMessage checks a Fetch from s before the actor sees it.
func (s *session) fetchMessage(f *pb.Fetch) {
	if !s.datagramFrames {
		s.sendError(pb.ErrorCode_ERROR_CODE_UNEXPECTED, "Fetch is for a player on WebTransport that joined with datagram_frames; this connection gets every frame on its stream")
		return
	}
	s.match.post(event{kind: evFetch, s: s, tick: f.GetFromTick()})
}
