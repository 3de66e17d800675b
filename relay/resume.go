package relay

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// ResumeMatches reloads every unfinished match from the replay directory — the files a
// relay killed mid-match left — and runs them again from their next safe tick, so their
// players can reconnect with the tokens they have. It refuses (and the relay should not
// start) when a file cannot be resumed, naming the file and the reason: a corrupt file, a
// wrong config hash, params a sim this relay knows refuses, or tokens this relay could not
// check because no token secret was configured. A match of a sim the relay does not know
// is resumed as it was served: opaquely. It returns how many matches it resumed.
func (s *Server) ResumeMatches() (int, error) {
	dir := s.opts.ReplayDir
	if dir == "" {
		return 0, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.tkr"))
	if err != nil {
		return 0, err
	}
	var open []*replay.Reopened
	closeAll := func() {
		for _, r := range open {
			r.File.Close()
		}
	}
	for _, path := range paths {
		r, err := replay.Reopen(path, &replay.WriterOptions{IdleFlush: s.opts.IdleFlush})
		if errors.Is(err, replay.ErrFinished) {
			continue
		}
		if err != nil {
			closeAll()
			return 0, fmt.Errorf("relay: cannot resume %s: %w (move the file out of the replay directory to start without it)", path, err)
		}
		open = append(open, r)
		if err := resumable(r); err != nil {
			closeAll()
			return 0, fmt.Errorf("relay: cannot resume %s: %w (move the file out of the replay directory to start without it)", path, err)
		}
	}
	if len(open) > 0 && s.generatedSecret {
		closeAll()
		return 0, fmt.Errorf("relay: %d unfinished matches in %s, whose players hold tokens signed with the previous token secret: "+
			"restart with that --token-secret (it was logged at the previous start), or move the files away", len(open), dir)
	}
	// Build every match before starting any: a failure part-way must leave nothing
	// running and every file closed (each stays resumable: at most it gained an idle run
	// and a RELAY_RESTARTED event).
	now := time.Now()
	built := make([]*match, 0, len(open))
	for _, r := range open {
		m, err := resumeOne(s, r, now)
		if err != nil {
			for range built {
				s.metrics.matchesRunning.Dec()
			}
			closeAll()
			return 0, err
		}
		built = append(built, m)
	}
	for _, m := range built {
		s.mu.Lock()
		s.matches[m.id] = m
		s.matchWG.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.matchWG.Done()
			m.run()
			s.retire(m.id)
		}()
	}
	return len(built), nil
}

// resumeOne is resumeMatch; a test replaces it to fail part-way.
var resumeOne = resumeMatch

// resumable checks what a resumed match needs from its file.
func resumable(r *replay.Reopened) error {
	st := r.Replay.Start
	if _, err := uuid.Parse(st.GetMatchId()); err != nil {
		return fmt.Errorf("its match id %q is not a UUID", st.GetMatchId())
	}
	if err := replay.CheckConfigHash(st); err != nil {
		return err
	}
	if err := checkKnownSim(st.GetSimName(), st.GetSimVersion(), replay.SimConfig(st)); err != nil {
		return err
	}
	if st.GetTickRate() == 0 || len(st.GetPlayers()) == 0 {
		return fmt.Errorf("its start record has no tick rate or no players")
	}
	return nil
}

// resumeMatch rebuilds a running match from its file. The relay may have sealed up to
// idle_flush-1 empty ticks past the end of the file before it died, and clients saw them;
// so the match goes on at the first tick past that bound, the skipped ticks recorded as
// empty (which every one of them was) with a RELAY_RESTARTED event. Commands accepted for
// ticks not yet sealed when the relay died are lost: no client ever saw them in a frame.
func resumeMatch(s *Server, r *replay.Reopened, now time.Time) (*match, error) {
	st := r.Replay.Start
	id := uuid.MustParse(st.GetMatchId())
	req := CreateRequest{Sim: st.GetSimName(), SimVersion: st.GetSimVersion(), Seed: st.GetSeed(),
		Params: st.GetSimParams(), Players: len(st.GetPlayers())}
	for _, p := range st.GetPlayers() {
		req.PlayerNames = append(req.PlayerNames, p.GetName())
	}
	opts := MatchOptions{TickRate: int(st.GetTickRate()), InputDelay: int(st.GetInputDelay()),
		MaxLead: int(st.GetMaxLead()), ChecksumEvery: int(st.GetChecksumEvery())}.withDefaults(s.opts.Match)
	m := newMatch(s, id, req, opts)
	m.maxTicks = st.GetMaxTicks()
	m.stream, _ = openStream(r.File, len(r.Bytes))
	m.writer = r.Writer(&m.stream)
	m.points = streamPoints(r.Bytes)
	r.Bytes = nil // the file holds them; memory need not

	idle := uint64(max(st.GetIdleFlush(), 1))
	first := r.Replay.Ticks + idle - 1
	if err := m.writer.SkipTo(first); err != nil {
		return nil, fmt.Errorf("relay: resuming %s: %w", m.path, err)
	}
	event := &pb.Event{Kind: pb.Event_KIND_RELAY_RESTARTED}
	if first > 0 {
		event.Tick = first - 1
	}
	if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: event}}); err != nil {
		return nil, fmt.Errorf("relay: resuming %s: %w", m.path, err)
	}
	m.addPoint(first)

	m.sched = lockstep.NewSchedule(lockstep.ScheduleOptions{
		MaxLead: opts.MaxLead, MaxCommandsPerTick: opts.MaxCommandsPerTick, MaxPayload: opts.MaxPayload, FirstTick: first,
	})
	slots := make([]uint32, len(m.slots))
	for i := range m.slots {
		slots[i] = uint32(i + 1)
		// Everyone joined once; until they reconnect, nobody is waited for.
		m.slots[i].joined, m.slots[i].droppedAt = true, now
	}
	m.judge = lockstep.NewJudge(slots, lockstep.JudgeOptions{Every: uint64(opts.ChecksumEvery)})
	for _, p := range slots {
		if _, err := m.judge.SetActive(p, false); err != nil {
			return nil, err
		}
	}
	// Tick `first` is sealed one tick period from now.
	m.clock0 = now.Add(-time.Duration(first * uint64(time.Second) / uint64(opts.TickRate)))
	m.resumed = true
	m.state = StateRunning
	m.status.state.Store(int32(StateRunning))
	m.status.ticks.Store(first)
	s.metrics.matchesRunning.Inc()
	m.log.Info("match resumed from its replay file", zap.Uint64("file_ticks", r.Replay.Ticks),
		zap.Uint64("first_tick", first), zap.Int64("torn_bytes_cut", r.Repaired))
	return m, nil
}

// streamPoints walks a stream's records and notes a point every pointEvery ticks or more
// (and one at the first tick record after the Start record and its events), always at a
// frame or idle record: a packed one needs the records before it. With no tick record
// yet, the one point is the end, where the reopened writer goes on with a whole one.
func streamPoints(b []byte) []streamPoint {
	var points []streamPoint
	var u stream.Unpacker // follows the ticks the records cover
	for off := startOffset; off < len(b); {
		n, err := stream.SplitRecord(b[off:])
		if err != nil {
			break
		}
		var msg pb.ServerMessage
		if stream.DecodeRecord(b[off:off+n], &msg) == nil {
			next := u.Next()
			anchor := msg.GetFrame() != nil || msg.GetIdle() != nil
			if u.Expand(&msg) != nil {
				break
			}
			if anchor && (len(points) == 0 || next-points[len(points)-1].next >= pointEvery) {
				points = append(points, streamPoint{next: next, off: off})
			}
		}
		off += n
	}
	if len(points) == 0 {
		points = append(points, streamPoint{next: 0, off: len(b)})
	}
	return points
}
