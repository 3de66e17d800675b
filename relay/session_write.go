// The writer side of a session: the goroutine that drains the send queue into the
// connection (pre-framed messages straight to the raw connection, acks riding with the
// next frame, stream catch-ups from memory or the file), and closing the connection.
// Frames to an idle connection skip the queue: the match actor writes them (deliver).

package relay

import (
	"fmt"
	"os"

	"github.com/coder/websocket"

	"github.com/tickrelay/tickrelay/stream"
)

// holdAck keeps a pre-framed ack for the writer to send with the next message it
// writes (one write syscall for both instead of two): acks come a few times a second
// and frames every tick, so an ack waits at most a tick and still arrives before the
// frame of any tick its command could be in. False if the connection has no raw writer.
func (s *session) holdAck(m *message) bool {
	if s.raw == nil || len(m.framed) == 0 || s.pending.Load() > 0 {
		// With messages queued (an earlier ack among them) it queues too: a held ack goes
		// out in front of the next write and would overtake them.
		return false
	}
	s.ackMu.Lock()
	s.acks = append(s.acks, m.framed...)
	s.ackMu.Unlock()
	return true
}

// heldAcks moves the held acks in front of b in the writer's buffer and returns it.
func (s *session) heldAcks(b []byte) []byte {
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	if len(s.acks) == 0 {
		return b
	}
	s.wbuf = append(append(s.wbuf[:0], s.acks...), b...)
	s.acks = s.acks[:0]
	return s.wbuf
}

// writeHeld writes the held acks on their own (after the rest of a cut frame).
func (s *session) writeHeld() error {
	s.raw.Lock()
	defer s.raw.Unlock()
	return s.raw.WriteLocked(s.heldAcks(nil))
}

// writeFramed writes a pre-framed message after the acks held for it.
func (s *session) writeFramed(m *message) error {
	s.raw.Lock()
	defer s.raw.Unlock()
	return s.raw.WriteLocked(s.heldAcks(m.framed))
}

// writeLoop drains the send queue until the session is kicked or its context ends.
func (s *session) writeLoop() {
	defer close(s.writerDone)
	defer s.drain()
	for {
		select {
		case m := <-s.send:
			err := s.write(m)
			closeAfter := m.closeAfter
			m.release()
			s.pending.Add(-1)
			if err != nil {
				s.stop() // nothing more can follow what failed: close, and the reader ends too
				return
			}
			if closeAfter {
				s.markDead() // nothing may follow the close frame
				s.closeConn(websocket.StatusNormalClosure, "match ended")
				return
			}
		case <-s.kicked:
			// Deliver what is already queued (the Error that explains the kick, the End)
			// first; kickGrace bounds it if the peer does not read.
			s.flush()
			s.closeConn(s.kickCode, s.kickReason)
			return
		case <-s.ctx.Done():
			s.conn.CloseNow()
			return
		}
	}
}

// writeStream writes whole stream records in messages of at most maxChunk bytes, split
// at record boundaries (a single larger record goes alone).
func (s *session) writeStream(b []byte) error {
	w := stream.NewWalker(b)
	chunk := 0 // where the message being gathered starts
	for w.Next() {
		if w.Offset() > chunk && w.End()-chunk > maxChunk {
			if err := s.conn.Write(writeCtx, websocket.MessageBinary, b[chunk:w.Offset()]); err != nil {
				return err
			}
			chunk = w.Offset()
		}
	}
	if w.Offset() > chunk {
		if err := s.conn.Write(writeCtx, websocket.MessageBinary, b[chunk:w.Offset()]); err != nil {
			return err
		}
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("relay: the stream is not whole records: %w", err)
	}
	return nil
}

// writeFile sends stream bytes [from, to) of the match's file, read a piece at a time
// and split at record boundaries like writeStream. A piece ends at the last whole record
// in it; a record larger than a piece is read whole.
func (s *session) writeFile(f *os.File, from, to int64) error {
	const piece = 256 << 10
	buf := make([]byte, 0, min(piece, to-from))
	for from < to {
		n := min(int64(cap(buf)), to-from)
		buf = buf[:n]
		if _, err := f.ReadAt(buf, from); err != nil {
			return fmt.Errorf("relay: reading the stream file: %w", err)
		}
		whole := stream.WholePrefix(buf)
		if whole == 0 {
			// One record larger than the buffer: find its size and read it whole.
			size, err := stream.RecordSize(buf)
			if err != nil || int64(size) > to-from {
				return fmt.Errorf("relay: the stream file is not whole records at byte %d", from)
			}
			buf = make([]byte, size)
			continue
		}
		if err := s.writeStream(buf[:whole]); err != nil {
			return err
		}
		from += int64(whole)
	}
	return nil
}

// closeConn performs the close handshake (bounded by the library's own timeout) and ends
// the session's context so the reader stops.
func (s *session) closeConn(code websocket.StatusCode, reason string) {
	if len(reason) > 120 {
		reason = reason[:120]
	}
	_ = s.conn.Close(code, reason)
	s.cancel()
}

// sendBytes sends bytes to this connection alone (deliver), dropping the caller's
// reference as every other sender does, so the message's reference count means what it
// says.
func (s *session) sendBytes(b []byte) {
	m := oneOff(b)
	if s.raw != nil {
		m.frameWS() // written like a frame: with the held acks, by whoever finds the connection idle
	}
	s.deliver(m)
	m.release()
}

// write sends one queued message: a file range, a stream slice, or plain bytes, after
// the acks held for it.
func (s *session) write(m *message) error {
	if len(m.framed) > 0 && s.raw != nil {
		return s.writeFramed(m)
	}
	if s.raw != nil {
		if err := s.writeHeld(); err != nil {
			return err
		}
	}
	switch {
	case m.src != nil:
		return s.writeFile(m.src.f, m.from, m.to)
	case m.stream:
		return s.writeStream(m.b)
	case len(m.b) > 0:
		return s.conn.Write(writeCtx, websocket.MessageBinary, m.b)
	}
	return nil
}

// flush writes every queued message and the acks still held, stopping at the first
// error.
func (s *session) flush() {
	for {
		select {
		case m := <-s.send:
			err := s.write(m)
			m.release()
			s.pending.Add(-1)
			if err != nil {
				return
			}
		default:
			if s.raw != nil {
				_ = s.writeHeld()
			}
			return
		}
	}
}

// markDead stops direct writes to the connection (deliver queues from then on).
func (s *session) markDead() {
	if s.raw != nil {
		s.raw.Kill()
	}
}

// drain drops what is still queued when the writer ends; from then on nothing is
// written to the connection directly (deliver queues, and nobody writes the queue).
func (s *session) drain() {
	s.markDead()
	for {
		select {
		case m := <-s.send:
			m.release()
			s.pending.Add(-1)
		default:
			return
		}
	}
}
