// The hooks a relay cluster (package relay/cluster) uses: where a match's stream is
// copied, where a match this server does not run lives, and how its stream is fed to
// this server's spectators. A single relay sets none of them.

package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"go.uber.org/zap"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// ErrMoved, wrapped by a Cluster's stream copy, means this server may no longer record
// the match: another node claimed it, or the copy could not be made durable. The match
// stops without an end record and its connections are closed without End, so that the
// clients reconnect and are sent to the node that resumes it from the cluster's copy.
var ErrMoved = errors.New("relay: this node may no longer record the match (another node claimed it, or its copy failed)")

// Cluster is what makes a Server one node of a relay cluster (Options.Cluster). Its
// methods are called from match actors and sessions: they may block on the network,
// briefly.
type Cluster interface {
	// Record returns where match id's stream is copied as it is written: every Write gets
	// whole records (the first one starts with the file header) and returns once the copy
	// is durable, before any socket gets what it holds (record before broadcast). An error
	// wrapping ErrMoved stops the match here (see ErrMoved); any other ends it.
	Record(id uuid.UUID) io.Writer
	// Ended tells that match id's actor stopped: ended (its stream has its end record,
	// or it ended in its lobby with no stream), or moved (ErrMoved).
	Ended(id uuid.UUID, moved bool)
	// Locate says where match id runs, asked for a match this server does not run.
	Locate(id uuid.UUID) (Remote, error)
	// Watch feeds match id's stream, from its first byte, to feed, one or more whole
	// records at a time, until the stream ends (nil), ctx ends or feed fails.
	Watch(ctx context.Context, id uuid.UUID, feed func([]byte) error) error
}

// ClusterIdleFlush is the idle flush (Options.IdleFlush) for a cluster node: a node
// writes runs of empty ticks at every spectator batch (6 ticks) anyway, for the other
// nodes' spectators, so saying so in the Start record costs nothing, and a node that
// claims a failed node's match skips at most 5 ticks instead of up to 1023.
const ClusterIdleFlush = spectatorBatch

// Remote is where a match this server does not run lives.
type Remote struct {
	// URL is the owner's WebSocket URL; empty when the match is moving (its node failed
	// or is handing it over, and another is taking it over): a join waits a moment
	// (settled), then is told to retry.
	URL string
	// Ended: the match has ended.
	Ended bool
	// TickRate and SpectatorDelay are the match's, for serving its spectators here.
	TickRate       int
	SpectatorDelay time.Duration
}

// What a join hears when its match is between two nodes (with ERROR_CODE_RETRY), and
// when it has ended (NO_MATCH), wherever the join lands.
const (
	reasonMoving = "the match is moving to another relay node; retry in a moment"
	reasonEnded  = "the match has ended"
)

// ErrNoMatch is what Cluster.Locate returns for a match no node knows.
var ErrNoMatch = errors.New("relay: no such match in the cluster")

// remoteJoin handles a join for a match this server does not run, in a cluster: a player
// is redirected to the owner (after waiting while the match moves, see settled), a
// spectator is served here from the cluster's copy of the stream. It returns the match
// to join (a spectator's mirror, or the match if it was resumed here meanwhile), or nil
// once the client was told why not.
func (s *Server) remoteJoin(sess *session, c Claims) *match {
	var r Remote
	var err error
	if c.Role == RoleSpectator {
		r, err = s.opts.Cluster.Locate(c.Match) // a mirror serves it wherever the match runs
	} else {
		var m *match
		if m, r, err = s.settled(sess, c.Match); m != nil {
			return m // resumed here while the join waited
		}
	}
	switch {
	case errors.Is(err, ErrNoMatch):
		s.metrics.connRejected.Inc()
		sess.fatal(pb.ErrorCode_ERROR_CODE_NO_MATCH, websocket.StatusNormalClosure, fmt.Sprintf("match %s does not exist in this relay cluster", c.Match))
		return nil
	case err != nil:
		s.log.Warn("locating a match failed", zap.String("match", c.Match.String()), zap.Error(err))
		sess.fatal(pb.ErrorCode_ERROR_CODE_RETRY, websocket.StatusTryAgainLater, "the relay cluster cannot locate the match right now; retry in a moment")
		return nil
	}
	if c.Role == RoleSpectator {
		return s.mirrorFor(c.Match, r)
	}
	switch {
	case r.Ended:
		sess.fatal(pb.ErrorCode_ERROR_CODE_NO_MATCH, websocket.StatusNormalClosure, reasonEnded)
	case r.URL == "":
		sess.fatal(pb.ErrorCode_ERROR_CODE_RETRY, websocket.StatusTryAgainLater, reasonMoving)
	default:
		b, _ := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{
			Code: pb.ErrorCode_ERROR_CODE_REDIRECT, Reason: "the match runs on another relay node: join at " + r.URL, RedirectUrl: r.URL}}})
		sess.sendBytes(b)
		sess.kick(websocket.StatusNormalClosure, "redirected to "+r.URL)
	}
	return nil
}

// moveWait bounds how long a player's join waits for a match between two nodes (a
// hand-over or a failover under way) to run somewhere again, and movePoll is how often it
// looks. Waiting where the join landed costs the player one connection instead of a
// refusal, a reconnect backoff and a second dial; a move that takes longer is refused
// with RETRY, as before.
const (
	moveWait = 2 * time.Second
	movePoll = 20 * time.Millisecond
)

// settled locates match id for a player's join, waiting up to moveWait while it is
// between two nodes: until the match runs here (m), or elsewhere (r.URL), or has ended.
// The cluster's Locate reads its in-memory view of the directory, so looking again is
// cheap; the session's kick (the join timeout, a shutdown) ends the wait.
func (s *Server) settled(sess *session, id uuid.UUID) (m *match, r Remote, err error) {
	deadline := time.Now().Add(moveWait)
	for {
		if m := s.lookup(id); m != nil {
			return m, Remote{}, nil
		}
		r, err = s.opts.Cluster.Locate(id)
		if err != nil || r.Ended || r.URL != "" || !time.Now().Add(movePoll).Before(deadline) {
			return nil, r, err
		}
		select {
		case <-time.After(movePoll):
		case <-sess.kicked:
			return nil, r, nil
		}
	}
}

// ResumeFrom resumes a match from an unfinished copy of its stream at path (a replay
// file's bytes), exactly as a relay restarted on its replay directory does (see
// ResumeMatches), and runs it. A cluster node calls it when it claimed the match of a
// failed node. With remove, the file is unlinked once open (a temporary copy).
func (s *Server) ResumeFrom(path string, remove bool) (uuid.UUID, error) {
	r, err := replay.Reopen(path, &replay.WriterOptions{IdleFlush: s.opts.IdleFlush})
	if remove {
		_ = os.Remove(path)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("relay: cannot resume %s: %w", path, err)
	}
	if err := s.resumable(r); err != nil {
		r.File.Close()
		return uuid.Nil, fmt.Errorf("relay: cannot resume %s: %w", path, err)
	}
	m, err := resumeMatch(s, r, time.Now())
	if err != nil {
		r.File.Close()
		return uuid.Nil, err
	}
	// The match's webhooks go on from its cursor, which a Cluster that keeps them
	// (HookCursors) shares; without one this node has none and delivers them again from
	// the first, with the same ids, since they derive from the same stream.
	m.attachHooks()
	if !s.runResumed(m) {
		return uuid.Nil, ErrClosing
	}
	return m.id, nil
}

// runResumed registers a resumed match and runs its actor; false (the match dropped) if
// the server is shutting down.
func (s *Server) runResumed(m *match) bool {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		m.releaseStream()
		s.metrics.matchesRunning.Dec()
		return false
	}
	s.matches[m.id] = m
	s.matchWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.matchWG.Done()
		m.run()
		s.retire(m.id)
	}()
	return true
}

// clusterCopy is the match's stream copy in a cluster, nil otherwise.
func (s *Server) clusterCopy(id uuid.UUID) io.Writer {
	if s.opts.Cluster == nil {
		return nil
	}
	return s.opts.Cluster.Record(id)
}

// abandon stops a match whose stream moved to another node (ErrMoved): no end record,
// and every connection closed without End, so that its clients reconnect and are sent to
// the node that resumes the match.
func (m *match) abandon(err error) {
	// Not "moved" in the log: a copy that timed out (a JetStream election) stops a match
	// here too, before any node claims it; the error says which it was.
	m.log.Warn("this node stops running the match; closing its connections, for the node that resumes it", zap.Error(err))
	m.moved = true
	m.setState(StateEnded)
	for i := range m.slots {
		if s := m.slots[i].live; s != nil {
			s.kick(websocket.StatusGoingAway, "the match moves to another relay node; reconnect")
			m.slots[i].live = nil
			m.srv.metrics.connPlayers.Dec()
			m.status.players.Add(-1)
		}
	}
	for _, s := range m.spectators {
		s.kick(websocket.StatusGoingAway, "the match moves to another relay node; reconnect")
		m.srv.metrics.connSpectators.Dec()
	}
	m.spectators = nil
	m.status.spectators.Store(0)
	m.releaseStream()
	m.points, m.sched, m.judge, m.writer, m.votes = nil, nil, nil, nil, nil
}

// ErrHandedOver is why a match handed over at shutdown stopped here (Server.HandOver).
var ErrHandedOver = fmt.Errorf("%w: handed over as this node shuts down", ErrMoved)

// Closing reports whether the server is shutting down or handing its matches over: it
// takes and resumes no match any more.
func (s *Server) Closing() bool { return s.closing.Load() }

// HandOver stops every match this server runs, in its lobby or running, without an end
// record, as a match that moved (ErrMoved): its connections are closed with GOING_AWAY
// (the clients reconnect and are sent to whichever node resumes it) and the Cluster is
// told each moved (Cluster.Ended). It takes no new match and refuses joins from then
// on, as Shutdown does, which should follow it. Only a cluster node hands over: another
// node must resume the matches from the cluster's copy of their streams.
func (s *Server) HandOver(ctx context.Context) error {
	if s.opts.Cluster == nil {
		return fmt.Errorf("relay: only a cluster node hands its matches over; a single relay ends them (Shutdown)")
	}
	s.mu.Lock()
	s.closing.Store(true)
	for _, m := range s.matches {
		select {
		case m.ctl <- endRequest{handOver: true}:
		default: // an end is already requested
		}
	}
	for _, m := range s.mirrors {
		m.requestEnd(pb.End_REASON_SHUTDOWN, "the relay is shutting down")
	}
	s.mu.Unlock()
	if err := wait(ctx, &s.matchWG); err != nil {
		return fmt.Errorf("relay: matches were not handed over in time: %w", err)
	}
	return nil
}

// control handles a request to end the match, or to hand it over.
func (m *match) control(req endRequest) {
	if req.handOver {
		m.abandon(ErrHandedOver)
		return
	}
	m.end(req.reason, req.detail)
}

// MatchOptions returns the settings match id runs with on this server.
func (s *Server) MatchOptions(id uuid.UUID) (MatchOptions, bool) {
	m := s.lookup(id)
	if m == nil {
		return MatchOptions{}, false
	}
	return m.opts, true
}

// RequireAdmin guards h with the server's admin key, as the match API is guarded.
func (s *Server) RequireAdmin(h http.HandlerFunc) http.HandlerFunc { return s.admin(h) }
