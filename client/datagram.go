// The datagrams of a session on WebTransport (stream/dgram): sealed frames that
// arrive before the stream's copy are applied at once, and each command goes as a
// datagram too, resent with every later one and each tick until the relay acks it. The
// stream stays the reliable path for commands, and for frames unless the session takes
// them as datagrams alone (fetch.go: then it asks the stream for what they miss).

package client

import (
	"context"
	"slices"
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
		apply := s.applyDatagramFrame
		if s.dgOff.Load() {
			apply = skipFrame // the stream (or a fetch) applies frames; the acks still count
		}
		s.applyMu.Lock()
		acked, err := dgram.DecodeFrames(b, apply)
		after := s.resendAfter()
		s.applyMu.Unlock()
		if err != nil {
			s.dgramsBad.Add(1)
			continue
		}
		s.unacked.ack(acked, after, s.datagramConn())
	}
}

func skipFrame(*pb.Frame) error { return nil }

// applyDatagramFrame applies f if it is the next tick (applyMu held). A frame past the
// next tick, for a player taking frames as datagrams that has caught up, fetches the
// ones between (while it catches up the stream is bringing them).
func (s *Session) applyDatagramFrame(f *pb.Frame) error {
	if s.peer == nil || s.end != nil {
		return nil
	}
	if next := s.peer.Next(); f.GetTick() != next {
		if f.GetTick() > next && s.fetchesFrames() {
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
// Commands sent from several goroutines may come here out of seq order: cmd goes in its
// place.
func (u *unacked) add(cmd *pb.Command, dg datagrams) {
	u.mu.Lock()
	defer u.mu.Unlock()
	i := len(u.cmds)
	for i > 0 && u.cmds[i-1].GetSeq() > cmd.GetSeq() {
		i--
	}
	u.cmds = slices.Insert(u.cmds, i, cmd)
	if len(u.cmds) > dgram.MaxCommands {
		u.cmds = append(u.cmds[:0], u.cmds[len(u.cmds)-dgram.MaxCommands:]...)
	}
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
	// The newest that fit the budget: the older ones are the stream's to deliver (it
	// carries every command), so the newest never waits behind them.
	for from := 0; from < len(u.cmds); from++ {
		var err error
		if u.buf, err = dgram.AppendCommands(u.buf[:0], u.cmds[from:]...); err == nil && len(u.buf) <= dgram.Budget {
			dg.SendDatagramNoWait(u.buf) // not sent: no loss either, for the same reason
			u.sent = time.Now()
			return
		}
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

// dgPings is the latest ping datagram: its nonce, when it went, whether it was
// answered, and how many before it were not in a row.
type dgPings struct {
	mu       sync.Mutex
	nonce    uint64
	at       time.Time
	answered bool
	missed   int
}

// pingDatagram sends a ping datagram with nonce n beside the stream's ping n: on
// WebTransport the round trip a session reports (Ping.rtt_us, which the relay turns into
// an input delay) is its datagrams', the way its commands go. Two unanswered in a row
// (datagrams lost or blocked) hand the round trip back to the stream's pongs. Only the
// latest ping's echo counts, and the first pings after a join go at a quarter of
// PingInterval: one of those unanswered before the next is not yet a miss (its echo may
// be on a path slower than a quarter interval).
func (s *Session) pingDatagram(n uint64) {
	dg := s.datagramConn()
	if dg == nil {
		return
	}
	p := &s.dgPings
	p.mu.Lock()
	if p.at.IsZero() || p.answered {
		p.missed = 0
	} else if time.Since(p.at) >= s.opts.PingInterval*3/4 {
		if p.missed++; p.missed >= 2 {
			s.dgRTT.Store(false)
		}
	}
	p.nonce, p.at, p.answered = n, time.Now(), false
	p.mu.Unlock()
	dg.SendDatagramNoWait(dgram.AppendPing(nil, n))
}

// datagramPong takes the relay's echo of the latest ping datagram as the round trip; an
// older one, or bytes that are not a ping, is dropped.
func (s *Session) datagramPong(b []byte) {
	n, err := dgram.DecodePing(b)
	if err != nil {
		s.dgramsBad.Add(1)
		return
	}
	p := &s.dgPings
	p.mu.Lock()
	defer p.mu.Unlock()
	if n != p.nonce || p.answered || p.at.IsZero() {
		return
	}
	p.answered = true
	s.rttUs.Store(uint32(min(time.Since(p.at).Microseconds(), 1<<31)))
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
