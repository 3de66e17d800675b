// The stream: records from the relay, applied to the sim through the peer.

package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// records handles every record of one relay message.
func (s *Session) records(b []byte) error {
	w := stream.NewWalker(b)
	for w.Next() {
		// Packed frames (spectator streams, catch-ups) come out as the Frames they code.
		var msg pb.ServerMessage
		if err := w.Decode(&msg, &s.unpack); errors.Is(err, stream.ErrUnknownRecord) {
			continue // a record from a newer relay: skip it
		} else if err != nil {
			return fmt.Errorf("client: the relay sent a bad record: %w", err)
		}
		if err := s.handle(&msg, w.Record()); err != nil {
			return err
		}
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("client: the relay sent a bad record: %w", err)
	}
	return nil
}

func (s *Session) handle(msg *pb.ServerMessage, rec []byte) error {
	// The records of this connection alone first; every other is the match's stream (the
	// replay file's records, whatever kinds a relay adds).
	if s.handleOwn(msg) {
		return nil
	}
	if err := s.checkBlock(msg, rec); err != nil {
		return err
	}
	s.streamBytes.Add(int64(len(rec)))
	if s.opts.OnStream != nil {
		s.opts.OnStream(s, rec)
	}
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Start:
		return s.begin(m.Start)
	case *pb.ServerMessage_Frame:
		return s.applyFrame(m.Frame)
	case *pb.ServerMessage_Idle:
		return s.applyIdle(m.Idle)
	case *pb.ServerMessage_Desync:
		if s.opts.OnDesync != nil {
			s.opts.OnDesync(s, m.Desync)
		}
	case *pb.ServerMessage_DesyncReport:
		if s.opts.OnDesyncReport != nil {
			s.opts.OnDesyncReport(s, m.DesyncReport)
		}
	case *pb.ServerMessage_End:
		s.end = m.End
	}
	return nil
}

// handleOwn handles a record of this connection alone (not of the match's stream): a
// welcome, an ack, a ping or pong, an error, a forensics probe, a heal's state. It reports
// whether msg was one. A failed write of an answer means the connection is going: the
// next read says so and the session reconnects.
func (s *Session) handleOwn(msg *pb.ServerMessage) bool {
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Welcome:
	case *pb.ServerMessage_CommandAck:
		s.headAck(m.CommandAck)
		s.unacked.ack(m.CommandAck.GetSeq(), time.Hour, nil)
		if s.opts.OnAck != nil {
			s.opts.OnAck(s, m.CommandAck)
		}
	case *pb.ServerMessage_Pong:
		s.pingMu.Lock()
		sent, ok := s.pings[m.Pong.GetNonce()]
		delete(s.pings, m.Pong.GetNonce())
		s.pingMu.Unlock()
		if ok && !s.dgRTT.Load() {
			s.rttUs.Store(uint32(min(time.Since(sent).Microseconds(), 1<<31)))
		}
		// 0 is a suggestion only to a client that sends on frames (Join.sends_on_frame).
		if d := m.Pong.GetInputDelay(); d > 0 || s.opts.SendsOnFrame {
			s.delay.Store(d)
		}
	case *pb.ServerMessage_Ping:
		_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Pong{Pong: &pb.Pong{Nonce: m.Ping.GetNonce()}}})
	case *pb.ServerMessage_Error:
		if s.opts.OnError != nil {
			s.opts.OnError(s, m.Error)
		}
	case *pb.ServerMessage_Probe:
		for _, ev := range s.answerAll(m.Probe) {
			_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Evidence{Evidence: ev}})
		}
	case *pb.ServerMessage_HealState:
		_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_HealResult{HealResult: s.heal(m.HealState)}})
	default:
		return false
	}
	return true
}

// begin builds the match's sim, its Peer, History and head from its Start record (the
// first one: a Start seen again on a resumed stream is the same match).
func (s *Session) begin(st *pb.Start) error {
	if s.start != nil {
		return nil
	}
	sm, err := s.opts.NewSim(st)
	if err != nil {
		return fmt.Errorf("client: cannot run this match: %w", err)
	}
	s.start, s.sim = st, sm
	s.peer = lockstep.NewPeer(sm, lockstep.PeerOptions{Every: uint64(st.GetChecksumEvery())})
	if s.Player() != 0 {
		s.hist = lockstep.NewHistory(func() (sim.Sim, error) { return s.opts.NewSim(st) }, 0)
	}
	if err := s.startHead(st); err != nil {
		return err
	}
	s.appliedAt.Store(time.Now().UnixNano()) // a silence is counted from the start
	close(s.started)
	if s.opts.OnStart != nil {
		s.opts.OnStart(s, st)
	}
	return nil
}

// applyIdle applies a run of empty ticks, through its last, within the match's bounds.
func (s *Session) applyIdle(idle *pb.Idle) error {
	if s.peer == nil {
		return fmt.Errorf("client: idle record before start")
	}
	through := idle.GetThroughTick()
	if last := s.start.GetMaxTicks(); last > 0 && through >= last {
		return fmt.Errorf("client: idle through tick %d, past the match's last tick %d (Start.max_ticks %d)", through, last-1, last)
	}
	if through > lockstep.MaxTick {
		return fmt.Errorf("client: %w: idle through tick %d", lockstep.ErrPastMaxTick, through)
	}
	for t := s.peer.Next(); t <= through; t++ {
		if t%idleCheckEvery == 0 && s.ctx.Err() != nil {
			return s.ctx.Err() // closed while stepping a long idle run
		}
		if err := s.apply(lockstep.Frame{Tick: t}); err != nil {
			return err
		}
	}
	return nil
}

// idleCheckEvery: a long run of idle ticks looks whether the session was closed every
// this many ticks.
const idleCheckEvery = 1024

func (s *Session) applyFrame(f *pb.Frame) error {
	if s.peer == nil {
		return fmt.Errorf("client: frame before start")
	}
	if f.GetTick() < s.peer.Next() {
		return nil // already applied (a resumed stream repeats what we have)
	}
	s.frame = stream.FrameOf(f, s.frame.Commands)
	return s.apply(s.frame)
}

// stale reports whether a checkpoint is too old to be judged any more: catching up on a
// long match, the session would otherwise send a burst of reports the relay has no use
// for (and its rate limit would count against the connection).
func (s *Session) stale(tick uint64) bool {
	st := s.Welcome().SealedTick
	every := uint64(max(s.start.GetChecksumEvery(), 1))
	return st != nil && tick+4*every < *st
}

// apply steps the sim through the peer, reports the checksum on the cadence (players
// only), and calls OnTick.
//
// A sim that fails does not end the session: its first error goes to OnSimFailed, and
// every checkpoint after is reported with hash 0 and the failure (a failed sim steps
// nothing and hashes 0), for the relay to judge.
func (s *Session) apply(f lockstep.Frame) error {
	s.appliedAt.Store(time.Now().UnixNano())
	c, report, err := s.peer.Apply(f)
	if errors.Is(err, lockstep.ErrSimFailed) {
		s.simFailed(err)
		c, report, err = lockstep.Checksum{Tick: f.Tick}, lockstep.IsCheckpoint(f.Tick, s.peer.Every()), nil
	}
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	s.sealed.Store(int64(f.Tick))
	if s.Live() {
		now := time.Now()
		if !s.lastLive.IsZero() {
			if gap := int64(now.Sub(s.lastLive)); gap > s.longestGap.Load() {
				s.longestGap.Store(gap)
			}
		}
		s.lastLive = now
	}
	s.headSealed(f, s.simErr.Load() != nil)
	if s.hist != nil {
		s.hist.Frame(f)
		if report && s.simErr.Load() == nil {
			s.hist.Checkpoint(c.Tick, s.sim)
		}
	}
	if report && s.Player() != 0 && !s.stale(c.Tick) {
		cs := &pb.Checksum{Tick: c.Tick, Hash: c.Hash}
		if failed := s.simErr.Load(); failed != nil {
			cs.Failed = lockstep.FailureText((*failed).Error())
		} else if e, ok := s.sim.(sim.Ender); ok {
			if over, winner := e.Outcome(); over {
				cs.Over, cs.Winner = true, winner
			}
		}
		// A failed write means the connection is going; the next read says so and the
		// session reconnects.
		_ = s.write(s.ctx, &pb.ClientMessage{Msg: &pb.ClientMessage_Checksum{Checksum: cs}})
	}
	if s.opts.OnTick != nil {
		s.opts.OnTick(s, f)
	}
	return nil
}

// simFailed keeps the sim's first failure and tells OnSimFailed.
func (s *Session) simFailed(err error) {
	if s.simErr.Load() == nil {
		s.simErr.Store(&err)
		if s.opts.OnSimFailed != nil {
			s.opts.OnSimFailed(s, err)
		}
	}
}

// checkBlock checks a spectator's stream against its crc records: a spectator receives
// the replay file's bytes, which the relay reads back from disk for a late joiner, so
// damage there is caught here. A player's stream mixes in live frames that are not the
// file's bytes, and is not checked (the relay checks its file when it resumes).
func (s *Session) checkBlock(msg *pb.ServerMessage, rec []byte) error {
	if s.Player() != 0 {
		return nil
	}
	if msg.GetStart() != nil {
		s.block.Reset()
		s.blockKnown = true
	}
	body := msg.GetCrc()
	if body == nil {
		if s.blockKnown {
			s.block.Add(rec)
		}
		return nil
	}
	known := s.blockKnown
	s.blockKnown = true // the next block starts here
	if !known {
		s.block.Reset()
		return nil
	}
	if err := s.block.Check(body); err != nil {
		return fmt.Errorf("client: the relay's stream is damaged before stream byte %d (its replay file is): %w", s.streamBytes.Load(), err)
	}
	return nil
}
