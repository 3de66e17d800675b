// A session on WebTransport taking its live frames from the datagrams alone
// (Options.DatagramFrames): the relay leaves them off the stream, and the session asks
// for what the datagrams missed (tickrelay.v1.Fetch) — when a datagram's oldest frame is
// past the next tick it needs (a burst longer than a datagram's bundle), or when no
// frame came for a while (datagrams blocked on the way). The frames come on the stream
// and are applied as any stream frame.

package client

import (
	"sync"
	"time"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// fetching is the last Fetch sent: one from a tick goes again only after a while.
type fetching struct {
	mu   sync.Mutex
	from uint64
	at   time.Time
}

// silence is how long a running match's session waits for a frame before it fetches.
func (s *Session) silence() time.Duration {
	return max(200*time.Millisecond, 6*s.tickDuration())
}

func (s *Session) tickDuration() time.Duration {
	if hz := s.start.GetTickRate(); hz > 0 {
		return time.Second / time.Duration(hz)
	}
	return 33 * time.Millisecond
}

// fetch asks for the frames from tick from on, unless it asked for them less than a
// round trip and two ticks ago (applyMu held: it reads the start).
func (s *Session) fetch(from uint64) {
	again := max(2*s.RTT()+2*s.tickDuration(), 100*time.Millisecond)
	f := &s.fetching
	f.mu.Lock()
	if f.from == from && time.Since(f.at) < again {
		f.mu.Unlock()
		return
	}
	f.from, f.at = from, time.Now()
	f.mu.Unlock()
	s.fetches.Add(1)
	_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Fetch{Fetch: &pb.Fetch{FromTick: from}}})
}

// silenceLoop fetches while a running match brings no frame (datagrams lost or blocked),
// until the connection dg is replaced or the session ends.
func (s *Session) silenceLoop(dg datagrams) {
	defer s.dgWG.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if s.datagramConn() != dg {
			return
		}
		s.applyMu.Lock()
		if s.peer != nil && s.end == nil && s.fetchesFrames() && s.running() && time.Since(time.Unix(0, s.appliedAt.Load())) > s.silence() {
			s.fetch(s.peer.Next())
		}
		s.applyMu.Unlock()
	}
}

// fetchesFrames says whether the session asks the stream for frames its datagrams
// missed: a player taking frames as datagrams, caught up with the match (while it
// catches up after a join or a resume, the stream is bringing them).
func (s *Session) fetchesFrames() bool {
	return s.opts.DatagramFrames && s.Player() != 0 && s.Live()
}

// running says whether the match has ticks left to apply (applyMu held).
func (s *Session) running() bool {
	last := s.start.GetMaxTicks()
	return last == 0 || s.peer.Next() < last
}
