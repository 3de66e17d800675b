// The datagrams of a session on WebTransport (stream/dgram): sealed frames that
// arrive before the stream's copy are applied at once, and each command goes as a
// datagram too, resent with every later one and each tick until the relay acks it. The
// stream stays the reliable path for both.

package client

import (
	"context"
	"sync"
	"time"

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
		if len(b) > 0 && b[0] == dgram.KindPing {
			s.datagramPong(b)
			continue
		}
		if s.dgOff.Load() {
			continue
		}
		s.applyMu.Lock()
		acked, err := dgram.DecodeFrames(b, s.applyDatagramFrame)
		after := s.resendAfter()
		s.applyMu.Unlock()
		if err != nil {
			s.dgramsBad.Add(1)
			continue
		}
		s.unacked.ack(acked, after, s.datagramConn())
	}
}

// applyDatagramFrame applies f if it is the next tick (applyMu held). A frame past the
// next tick, for a session taking frames as datagrams, fetches the ones between.
func (s *Session) applyDatagramFrame(f *pb.Frame) error {
	if s.peer == nil || s.end != nil {
		return nil
	}
	if next := s.peer.Next(); f.GetTick() != next {
		if f.GetTick() > next && s.opts.DatagramFrames {
			s.fetch(next)
		}
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

// unacked are the commands sent as datagrams that the relay has not acked yet, resent
// until it does (GGPO's rule): a lost datagram then costs a command a tick, where its
// stream copy would wait out a retransmission.
type unacked struct {
	mu    sync.Mutex
	cmds  []*pb.Command // ascending seq; the newest dgram.MaxCommands (older ones: the stream's)
	acked uint32        // the highest seq the relay said it has
	sent  time.Time     // when cmds last went
	buf   []byte
}

// add sends cmd as a datagram with every command before it the relay has not acked.
func (u *unacked) add(cmd *pb.Command, dg datagrams) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.cmds) == dgram.MaxCommands {
		u.cmds = append(u.cmds[:0], u.cmds[1:]...)
	}
	u.cmds = append(u.cmds, cmd)
	u.send(dg)
}

// ack drops the commands through seq acked; what is left goes again if it last went at
// least after ago.
func (u *unacked) ack(acked uint32, after time.Duration, dg datagrams) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if acked > u.acked {
		u.acked = acked
		n := 0
		for n < len(u.cmds) && u.cmds[n].GetSeq() <= acked {
			n++
		}
		u.cmds = append(u.cmds[:0], u.cmds[n:]...)
	}
	if len(u.cmds) > 0 && time.Since(u.sent) >= after {
		u.send(dg)
	}
}

func (u *unacked) send(dg datagrams) {
	if dg == nil || len(u.cmds) == 0 {
		return
	}
	var err error
	if u.buf, err = dgram.AppendCommands(u.buf[:0], u.cmds...); err == nil && len(u.buf) <= dgram.Budget {
		// A datagram that cannot be sent is no loss: the stream carries every command.
		dg.SendDatagramNoWait(u.buf)
		u.sent = time.Now()
	}
}

// sendDatagram sends cmd as a datagram too, when the connection has them.
func (s *Session) sendDatagram(cmd *pb.Command) {
	if dg := s.datagramConn(); dg != nil {
		s.unacked.add(cmd, dg)
	}
}

func (s *Session) datagramConn() datagrams {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.dg
}

// resendAfter is how long an unacked command waits to go again: half a tick, so it goes
// with each frames datagram (one a tick) until its ack arrives (applyMu held).
func (s *Session) resendAfter() time.Duration {
	if hz := s.start.GetTickRate(); hz > 0 {
		return time.Second / time.Duration(2*hz)
	}
	return 16 * time.Millisecond
}

// pingDatagram sends a ping datagram with nonce n beside the stream's ping n: on
// WebTransport the round trip a session reports (Ping.rtt_us, which the relay turns into
// an input delay) is its datagrams', the way its commands go.
func (s *Session) pingDatagram(n uint64) {
	if dg := s.datagramConn(); dg != nil {
		s.dgPingAt.Store(time.Now().UnixNano())
		s.dgPing.Store(n)
		dg.SendDatagramNoWait(dgram.AppendPing(nil, n))
	}
}

// datagramPong takes the relay's echo of the latest ping datagram as the round trip; an
// older one, or bytes that are not a ping, is dropped.
func (s *Session) datagramPong(b []byte) {
	n, err := dgram.DecodePing(b)
	if err != nil {
		s.dgramsBad.Add(1)
		return
	}
	if n != s.dgPing.Load() {
		return
	}
	rtt := time.Since(time.Unix(0, s.dgPingAt.Load()))
	s.rttUs.Store(uint32(min(rtt.Microseconds(), 1<<31)))
	s.dgRTT.Store(true)
}

// DatagramStats says what the WebTransport datagrams did for this session: datagrams
// received, frames applied from them before the stream's copy arrived, and datagrams
// dropped as malformed.
func (s *Session) DatagramStats() (received, framesFirst, malformed int64) {
	return s.dgramsIn.Load(), s.dgramFrames.Load(), s.dgramsBad.Load()
}

// Fetches says how many times a session taking frames as datagrams
// (Options.DatagramFrames) asked the relay for frames its datagrams missed.
func (s *Session) Fetches() int64 { return s.fetches.Load() }
