// The datagrams of a session on WebTransport (stream/dgram): sealed frames that
// arrive before the stream's copy are applied at once, and each command goes as a
// datagram too. The stream stays the reliable path for both.

package client

import (
	"context"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
	"github.com/tickrelay/tickrelay/stream/dgram"
)

// datagrams is a WebTransport connection's datagram side (internal/lib/wtransport's Conn).
type datagrams interface {
	SendDatagramNoWait(b []byte) bool
	ReceiveDatagram(ctx context.Context) ([]byte, error)
}

// datagramLoop applies the frames of dg's datagrams until the connection closes. A
// frame is applied only when it is the next tick the session needs; the stream's copy
// of it is then skipped as already applied. A malformed datagram is dropped and counted.
func (s *Session) datagramLoop(dg datagrams) {
	defer s.dgWG.Done()
	for {
		b, err := dg.ReceiveDatagram(s.ctx)
		if err != nil {
			return
		}
		s.dgramsIn.Add(1)
		if s.dgOff.Load() {
			continue
		}
		s.applyMu.Lock()
		err = dgram.DecodeFrames(b, s.applyDatagramFrame)
		s.applyMu.Unlock()
		if err != nil {
			s.dgramsBad.Add(1)
		}
	}
}

// applyDatagramFrame applies f if it is the next tick (applyMu held).
func (s *Session) applyDatagramFrame(f *pb.Frame) error {
	if s.peer == nil || s.end != nil || f.GetTick() != s.peer.Next() {
		return nil
	}
	if last := s.start.GetMaxTicks(); last > 0 && f.GetTick() >= last {
		return nil
	}
	s.frame = stream.FrameOf(f, s.frame.Commands)
	if err := s.apply(s.frame); err != nil {
		// Leave it to the stream, whose copy meets the same error where it reports it.
		s.dgOff.Store(true)
		return nil
	}
	s.dgramFrames.Add(1)
	return nil
}

// sendDatagram sends cmd as a datagram too, when the connection has them; a datagram
// that cannot be sent is no loss (the stream carries the command).
func (s *Session) sendDatagram(cmd *pb.Command) {
	s.connMu.Lock()
	dg := s.dg
	s.connMu.Unlock()
	if dg == nil {
		return
	}
	if b, err := dgram.AppendCommand(nil, cmd); err == nil {
		dg.SendDatagramNoWait(b)
	}
}

// DatagramStats says what the WebTransport datagrams did for this session: datagrams
// received, frames applied from them before the stream's copy arrived, and datagrams
// dropped as malformed.
func (s *Session) DatagramStats() (received, framesFirst, malformed int64) {
	return s.dgramsIn.Load(), s.dgramFrames.Load(), s.dgramsBad.Load()
}
