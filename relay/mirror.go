// Mirrors: in a cluster, the spectators of a match another node runs are served here
// from the cluster's copy of its stream, by a match that only holds that stream.

package relay

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"go.uber.org/zap"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// mirrorLinger is how long a mirror with no spectator left keeps following the stream
// before it stops (and so its one consumer of the cluster's copy goes): 10 s.
const mirrorLinger = 10 * time.Second

// mirrorState is what a mirror keeps besides the match fields it shares with a match it
// runs (the stream, its points, the spectators). Owned by the mirror's actor.
type mirrorState struct {
	feed    chan []byte // whole records from the cluster's copy, in order
	watched chan error  // the watch's end: nil when the stream ended
	covered uint64      // ticks the stream holds
	unpack  stream.Unpacker
	started bool // the file header and Start record arrived
}

// sealedTicks is how many ticks the match has sealed, as far as this server knows: for a
// mirror, the ticks its copy of the stream covers.
func (m *match) sealedTicks() uint64 {
	if m.mirror != nil {
		return m.mirror.covered
	}
	return m.sched.NextTick()
}

// mirrorFor returns the server's mirror of match id, starting it (and its one watch of
// the cluster's copy) if there is none; nil when the server is shutting down.
func (s *Server) mirrorFor(id uuid.UUID, r Remote) *match {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.mirrors[id]; m != nil {
		return m
	}
	if s.closing.Load() {
		return nil
	}
	opts := MatchOptions{TickRate: r.TickRate}.withDefaults(s.opts.Match)
	opts.SpectatorDelay = r.SpectatorDelay // the owner's, never this server's default
	m := newMatch(s, id, CreateRequest{}, opts)
	m.log = m.log.With(zap.Bool("mirror", true))
	m.path = ""
	m.mirror = &mirrorState{feed: make(chan []byte, 64), watched: make(chan error, 1)}
	stream, err := openStream(nil, 0)
	if err != nil {
		m.log.Warn("keeping the mirrored stream in memory", zap.Error(err))
	}
	m.stream = stream
	s.mirrors[id] = m
	s.matchWG.Add(1)
	go func() {
		defer s.matchWG.Done()
		m.runMirror()
	}()
	return m
}

// runMirror is a mirror's actor: it appends what the watch feeds to the stream and
// serves the spectators as a running match does, until the stream ends, the last
// spectator left mirrorLinger ago, or the server shuts down.
func (m *match) runMirror() {
	defer m.refuseLate()
	defer close(m.done)
	mir := m.mirror
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		mir.watched <- m.srv.opts.Cluster.Watch(ctx, m.id, func(b []byte) error {
			select {
			case mir.feed <- b:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	defer func() {
		cancel()
		<-mir.watched
		m.releaseStream()
	}()
	m.status.state.Store(int32(StateLobby))
	batch := time.NewTicker(time.Duration(spectatorBatch) * time.Second / time.Duration(m.opts.TickRate))
	defer batch.Stop()
	linger := time.NewTimer(mirrorLinger)
	defer linger.Stop()
	for {
		select {
		case ev := <-m.inbox:
			switch ev.kind {
			case evJoin:
				m.join(ev.s, time.Now())
			case evLeave, evGone:
				m.gone(ev.s, ev.kind == evLeave, time.Now())
			}
			if len(m.spectators) == 0 {
				linger.Reset(mirrorLinger)
			}
		case b := <-mir.feed:
			if m.mirrorFed(b) {
				return
			}
		case err := <-mir.watched:
			mir.watched <- err // for the deferred wait
			if err != nil {
				m.log.Warn("watching the match's stream failed; its spectators reconnect", zap.Error(err))
				m.stopMirror(websocket.StatusGoingAway, "the relay lost the match's stream; reconnect")
				return
			}
			// The watch put its last records in feed before it returned, and sends no
			// more: they come first (the end record may be among them).
			for len(mir.feed) > 0 {
				if m.mirrorFed(<-mir.feed) {
					return
				}
			}
			m.state = StateEnded
			m.stopMirror(websocket.StatusNormalClosure, "")
			return
		case <-batch.C:
			m.flushSpectators()
		case <-linger.C:
			if m.unmirror() {
				return
			}
			linger.Reset(mirrorLinger)
		case <-m.ctl:
			m.stopMirror(websocket.StatusGoingAway, "the relay is shutting down")
			return
		}
	}
}

// mirrorFed appends records the watch fed; it reports whether the mirror stopped (the
// stream ended, or it is unusable).
func (m *match) mirrorFed(b []byte) bool {
	if err := m.mirrorAppend(b); err != nil {
		m.log.Error("the cluster's copy of the stream is unusable; closing its spectators", zap.Error(err))
		m.stopMirror(websocket.StatusInternalError, "the relay cannot read the match's stream")
		return true
	}
	if m.state == StateEnded {
		m.stopMirror(websocket.StatusNormalClosure, "")
		return true
	}
	return false
}

// unmirror forgets the mirror if nobody watches or is about to join.
func (m *match) unmirror() bool {
	s := m.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(m.spectators) > 0 || len(m.inbox) > 0 {
		return false
	}
	delete(s.mirrors, m.id)
	return true
}

// stopMirror sends the spectators what they may still see and closes them: a stream that
// ended (code 0) closes as a finished match does, else with code, and they reconnect.
func (m *match) stopMirror(code websocket.StatusCode, reason string) {
	m.srv.mu.Lock()
	if m.srv.mirrors[m.id] == m {
		delete(m.srv.mirrors, m.id)
	}
	m.srv.mu.Unlock()
	m.status.state.Store(int32(m.state))
	if reason == "" {
		m.flushSpectators()
		m.closeSpectators()
		return
	}
	for _, s := range m.spectators {
		s.kick(code, reason)
		m.srv.metrics.connSpectators.Dec()
	}
	m.spectators = nil
	m.status.spectators.Store(0)
}

// mirrorAppend adds whole records of the stream (the first ones after the file header)
// and notes the points and ticks they hold.
func (m *match) mirrorAppend(b []byte) error {
	mir := m.mirror
	at := 0
	if !mir.started {
		if len(b) < startOffset || !bytes.Equal(b[:startOffset], replay.AppendHeader(nil)) {
			return fmt.Errorf("relay: the mirrored stream does not start with a version %d replay header", replay.FormatVersion)
		}
		at = startOffset
	}
	base := m.stream.size
	ended := false
	w := stream.NewWalker(b[at:])
	for w.Next() {
		p := at + w.Offset()
		var msg pb.ServerMessage
		if err := w.Decode(&msg, nil); err != nil {
			return fmt.Errorf("relay: the mirrored stream at byte %d: %w", base+p, err)
		}
		next := mir.unpack.Next()
		anchor := msg.GetFrame() != nil || msg.GetIdle() != nil // a whole tick record, not a packed one
		if err := mir.unpack.Expand(&msg); err != nil {
			return fmt.Errorf("relay: the mirrored stream at byte %d: %w", base+p, err)
		}
		if anchor && len(m.points) > 0 && m.points.due(next) { // the first point is the Start's (below)
			m.points.add(streamPoint{next: next, off: base + p})
		}
		ended = ended || msg.GetEnd() != nil
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("relay: the mirrored stream at byte %d: %w", base+at+w.Offset(), err)
	}
	if _, err := m.stream.Write(b); err != nil {
		return err
	}
	mir.covered = mir.unpack.Next()
	if !mir.started {
		// As a match that begins: spectators always get at least the Start record and
		// what precedes the first tick.
		mir.started = true
		m.points.add(streamPoint{next: 0, off: m.stream.size})
		m.state = StateRunning
		m.status.state.Store(int32(StateRunning))
		// The spectators waiting for the start read it from the file; what follows is
		// kept in memory for them.
		m.stream.setHold(len(m.spectators) > 0)
	}
	if ended {
		m.state = StateEnded
	}
	return nil
}
