// A connection that joins a match after it ended.

package relay

import (
	"os"
	"runtime"
	"time"

	"github.com/coder/websocket"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// endedServeTimeout bounds how long a connection may take to receive the rest of an
// ended match's stream.
const endedServeTimeout = time.Minute

// refuseLate answers the joins that reached the inbox as the actor stopped: the match
// has ended or moved, and they must hear it rather than wait.
func (m *match) refuseLate() {
	for {
		select {
		case ev := <-m.inbox:
			m.afterEnd(ev)
			continue
		default:
		}
		// A post under way finishes at once (done is closed); its event may still come.
		if m.posting.Load() == 0 && len(m.inbox) == 0 {
			return
		}
		runtime.Gosched()
	}
}

// afterEnd answers an event that reached the match after it ended: a join gets the rest
// of the ended match's stream or is refused; anything else is moot (end closed every
// connection).
func (m *match) afterEnd(ev event) {
	if ev.kind == evJoin && !m.joinEnded(ev.s) {
		m.refuseJoin(ev.s)
	}
}

// refuseJoin answers a join that reached the match after its actor stopped (done is
// closed, so its fields are settled) and that joinEnded could not serve.
func (m *match) refuseJoin(s *session) { s.fatal(m.stoppedReply()) }

// stoppedReply is what a join to a stopped match hears. A match that moved to another
// node is resumed there: retry, and this node, which forgets it as its actor stops, then
// sends the client on (remoteJoin). Any other has ended.
func (m *match) stoppedReply() (pb.ErrorCode, websocket.StatusCode, string) {
	if m.moved {
		return pb.ErrorCode_ERROR_CODE_RETRY, websocket.StatusTryAgainLater, reasonMoving
	}
	return pb.ErrorCode_ERROR_CODE_NO_MATCH, websocket.StatusNormalClosure, reasonEnded
}

// joinEnded answers a connection that joins a match whose actor has stopped (done is
// closed, so the match's fields are settled). While the relay keeps the ended match
// (Options.KeepEnded) and its replay file has its end record, the connection gets what it
// missed: Welcome, the stream from where it resumes through the end record, and a normal
// close. So a player who was away when its match ended (a long drop, a relay restart that
// outlasted its grace) still finishes its game. The connection's writer reads the file
// in pieces, as for any catch-up, so a late joiner holds no copy of it. It reports false
// when it cannot serve the connection, which is then told the match has ended (NO_MATCH).
func (m *match) joinEnded(s *session) bool {
	if !m.finished || s.claims.Role == RolePlayer && (s.claims.Slot < 1 || int(s.claims.Slot) > len(m.slots)) {
		return false
	}
	if since := m.endedAt; since.IsZero() || time.Since(since) > m.srv.opts.KeepEnded {
		return false
	}
	f, err := os.Open(m.path)
	if err != nil {
		return false
	}
	file := newFileRef(f)
	defer file.release()
	info, err := f.Stat()
	if err != nil || info.Size() < startOffset {
		return false
	}
	size := info.Size()
	from := int64(m.resumeOffset(s)) // the match keeps its stream points when it ends
	if s.claims.Role == RoleSpectator && s.resumeOffset != nil {
		// Exactly where a spectator stopped, when that is a record boundary.
		want := startOffset + int64(min(*s.resumeOffset, uint64(size-startOffset)))
		at := int64(m.pointBefore(int(want)))
		b := make([]byte, want-at)
		if _, err := f.ReadAt(b, at); err == nil && stream.Whole(b) {
			from = want
		}
	}
	welcome := &pb.Welcome{MatchId: m.id.String(), InputDelay: uint32(m.opts.InputDelay), Player: s.claims.Slot}
	if t := m.status.ticks.Load(); t > 0 {
		welcome.SealedTick = &[]uint64{t - 1}[0]
	}
	if s.claims.Role == RolePlayer {
		welcome.LastSeq = m.slots[s.claims.Slot-1].lastSeq
	} else {
		welcome.Player = 0
	}
	m.sendRecord(s, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: welcome}})
	msg := oneOff(nil)
	msg.src, msg.from, msg.to = file.acquire(), from, size
	msg.stream, msg.closeAfter = true, true
	s.enqueue(msg)
	msg.release()
	return true
}
