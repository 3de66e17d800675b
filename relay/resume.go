package relay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// ResumeMatches reloads every unfinished match from the replay directory — the files a
// relay killed mid-match (or with matches in their lobby) left — so their players can
// reconnect with the tokens they have. A running match waits for its players before its
// clock goes on (see await); a match in its lobby is in its lobby again. It refuses (and
// the relay should not start) when a file cannot be resumed, naming the file and the
// reason: a damaged file, a wrong config hash, params a sim this relay knows refuses, or
// tokens this relay could not check (no token secret configured, or another one than
// the matches were created with). A match of a sim the relay does not know is resumed as
// it was served: opaquely. It returns how many matches it resumed.
func (s *Server) ResumeMatches() (int, error) {
	dir := s.opts.ReplayDir
	if dir == "" {
		return 0, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.tkr"))
	if err != nil {
		return 0, err
	}
	open, err := s.reopenUnfinished(paths)
	if err != nil {
		return 0, err
	}
	closeAll := func() {
		for _, r := range open {
			r.File.Close()
		}
	}
	if len(open) > 0 && s.generatedSecret {
		closeAll()
		return 0, fmt.Errorf("relay: %d unfinished matches in %s, whose players hold tokens signed with the previous token secret: "+
			"restart with that --token-secret (it was logged at the previous start), or move the files away", len(open), dir)
	}
	if err := s.checkFingerprint(len(open)); err != nil {
		closeAll()
		return 0, err
	}
	built, err := s.buildResumed(open)
	if err != nil {
		closeAll()
		return 0, err
	}
	for i, m := range built {
		m.attachHooks()
		if !s.runResumed(m) {
			// Shut down while starting them: the rest never run either.
			for _, rest := range built[i+1:] {
				rest.releaseStream()
				s.metrics.matchesRunning.Dec()
			}
			return i, ErrClosing
		}
	}
	if s.hooks != nil {
		s.hooks.Recover()
	}
	return len(built), nil
}

// reopenUnfinished reopens the files of paths that hold an unfinished match, each
// checked to be resumable, skipping finished ones and removing those with nothing
// written. When one cannot be resumed, the files it opened are closed again.
func (s *Server) reopenUnfinished(paths []string) ([]*replay.Reopened, error) {
	var open []*replay.Reopened
	for _, path := range paths {
		r, err := replay.Reopen(path, &replay.WriterOptions{IdleFlush: s.opts.IdleFlush})
		if errors.Is(err, replay.ErrFinished) {
			continue
		}
		if errors.Is(err, replay.ErrUnwritten) {
			// Created as the relay stopped: nothing was recorded, no token handed out.
			s.log.Warn("removing a replay file with nothing written in it", zap.String("path", path), zap.Error(err))
			if err := os.Remove(path); err != nil {
				return nil, refuseFile(path, err)
			}
			continue
		}
		if err == nil {
			open = append(open, r)
			err = s.resumable(r)
		}
		if err != nil {
			for _, r := range open {
				r.File.Close()
			}
			return nil, refuseFile(path, err)
		}
	}
	return open, nil
}

// buildResumed builds a match of every reopened file before any starts: a failure
// part-way leaves nothing running (each file stays resumable: at most it gained a
// RELAY_RESTARTED event); the caller closes the files.
func (s *Server) buildResumed(open []*replay.Reopened) ([]*match, error) {
	now := time.Now()
	built := make([]*match, 0, len(open))
	for _, r := range open {
		m, err := resumeOne(s, r, now)
		if err != nil {
			for _, m := range built {
				if m.resumed {
					s.metrics.matchesRunning.Dec()
				}
				m.releaseStream() // unmaps the file and cuts the tail its appends reserved
			}
			return nil, refuseFile(r.File.Name(), err)
		}
		built = append(built, m)
	}
	return built, nil
}

// refuseFile is the error that keeps a relay from starting on a file it cannot resume.
func refuseFile(path string, err error) error {
	return fmt.Errorf("relay: cannot resume the match in %s: %w (move the file out of the replay directory to start without it)", path, err)
}

// fingerprintFile, in the replay directory, identifies the token secret of the relay
// that last started on it (Tokens.Fingerprint; never the secret itself).
const fingerprintFile = "token-secret.fingerprint"

// checkFingerprint refuses to resume unfinished matches whose tokens were signed with
// another secret than this relay's: no player could rejoin them. Then it notes this
// relay's fingerprint for the next start.
func (s *Server) checkFingerprint(unfinished int) error {
	path := filepath.Join(s.opts.ReplayDir, fingerprintFile)
	have := s.tokens.Fingerprint()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("relay: reading the token secret's fingerprint: %w", err)
	}
	if was := strings.TrimSpace(string(old)); unfinished > 0 && err == nil && was != have {
		return fmt.Errorf("relay: %d unfinished matches in %s were created by a relay with another --token-secret "+
			"(fingerprint %s in %s, this secret's is %s): their players' tokens would not verify. "+
			"Restart with that relay's --token-secret, or move the .tkr files out of %s to start without those matches",
			unfinished, s.opts.ReplayDir, was, path, have, s.opts.ReplayDir)
	}
	if was := strings.TrimSpace(string(old)); was == have {
		return nil
	}
	if err := os.WriteFile(path, []byte(have+"\n"), 0o644); err != nil {
		return fmt.Errorf("relay: writing the token secret's fingerprint: %w", err)
	}
	return nil
}

// resumeOne is resumeMatch; a test replaces it to fail part-way.
var resumeOne = resumeMatch

// resumable checks what a resumed match needs from its file.
func (s *Server) resumable(r *replay.Reopened) error {
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
	_, err := s.resumedOptions(st)
	return err
}

// recordOptions puts the match's settings that the Start record has no other field for
// into it, so that a relay resuming the match from its stream keeps them (startOptions).
func recordOptions(st *pb.Start, o MatchOptions) {
	st.MinInputDelay, st.MaxInputDelay = uint32(o.MinInputDelay), uint32(o.MaxInputDelay)
	st.JudgeTimeout = uint32(o.JudgeTimeout)
	st.MaxPayload, st.MaxCommandsPerTick = uint32(o.MaxPayload), uint32(o.MaxCommandsPerTick)
	st.SpectatorDelayMs = uint64(o.SpectatorDelay.Milliseconds())
	st.LobbyTimeoutMs = uint64(o.LobbyTimeout.Milliseconds())
	st.PeerHeals = o.peerHeals()
}

// startOptions are the match options its Start record holds; a field it does not set (a
// stream from before it was recorded) is zero, so the resuming relay's default.
func startOptions(st *pb.Start) MatchOptions {
	var maxDuration time.Duration
	if rate := st.GetTickRate(); rate > 0 {
		maxDuration = time.Duration(min(st.GetMaxTicks(), maxOptionMs)) * time.Second / time.Duration(rate)
	}
	return MatchOptions{
		TickRate: int(st.GetTickRate()), InputDelay: int(st.GetInputDelay()),
		MinInputDelay: int(st.GetMinInputDelay()), MaxInputDelay: int(st.GetMaxInputDelay()),
		MaxLead: int(st.GetMaxLead()), ChecksumEvery: int(st.GetChecksumEvery()),
		JudgeTimeout: int(st.GetJudgeTimeout()),
		MaxPayload:   int(st.GetMaxPayload()), MaxCommandsPerTick: int(st.GetMaxCommandsPerTick()),
		SpectatorDelay: time.Duration(min(st.GetSpectatorDelayMs(), maxOptionMs)) * time.Millisecond,
		LobbyTimeout:   time.Duration(min(st.GetLobbyTimeoutMs(), maxOptionMs)) * time.Millisecond,
		MaxDuration:    maxDuration, // as a duration; the match keeps max_ticks itself
		PeerHeals:      &[]bool{st.GetPeerHeals()}[0],
	}
}

// resumedOptions are the options a resumed match runs with: its Start record's, and the
// relay's defaults for what the record does not say.
func (s *Server) resumedOptions(st *pb.Start) (MatchOptions, error) {
	o := startOptions(st).withDefaults(s.opts.Match)
	if st.GetMaxInputDelay() == 0 && o.MaxInputDelay >= o.MaxLead {
		// A stream from before the bounds were recorded: its max lead may be below
		// this relay's default bound, which must stay under it.
		o.MaxInputDelay = o.MaxLead - 1
		o.MinInputDelay = min(o.MinInputDelay, o.MaxInputDelay)
	}
	if err := validate(o); err != nil {
		return o, fmt.Errorf("its start record's settings are invalid: %w", err)
	}
	return o, nil
}

// maxOptionMs clamps a duration, in milliseconds, or a tick count read from a stream
// before it becomes a time.Duration, so that a damaged or hand-made value cannot overflow
// it: just past MaxMatchDuration, the longest any setting may be, so validate still
// refuses what was clamped.
const maxOptionMs = uint64(MaxMatchDuration/time.Millisecond) + 1

// reloadMatch rebuilds a match from its file: its identity, its stream (the writer goes
// on at the file's end, with a RELAY_RESTARTED event at the last tick the file covers)
// and its slots from the connection events.
func reloadMatch(s *Server, r *replay.Reopened) (*match, error) {
	st := r.Replay.Start
	id := uuid.MustParse(st.GetMatchId())
	req := CreateRequest{Sim: st.GetSimName(), SimVersion: st.GetSimVersion(), Seed: st.GetSeed(),
		Params: st.GetSimParams(), SimFuel: st.GetSimFuel(), Players: len(st.GetPlayers())}
	for _, p := range st.GetPlayers() {
		req.PlayerNames = append(req.PlayerNames, p.GetName())
	}
	opts, err := s.resumedOptions(st)
	if err != nil {
		return nil, err
	}
	m := newMatch(s, id, req, opts)
	m.maxTicks = st.GetMaxTicks()
	m.stream, _ = openStream(r.File, len(r.Bytes))
	m.stream.copy = s.clusterCopy(id)
	m.writer = r.Writer(&m.stream)
	m.points = pointsIn(r.Bytes)
	m.fileTicks = r.Replay.Ticks
	r.Bytes = nil // the file holds them; memory need not
	// Who was connected when the relay died: their last connection event since the last
	// restart event (written as the relay came back, before anyone reconnected) is a join
	// or a reconnect.
	for _, e := range r.Replay.Events {
		p := e.GetPlayer()
		switch e.GetKind() {
		case pb.Event_KIND_RELAY_RESTARTED:
			for i := range m.slots {
				m.slots[i].awaited = false
			}
		case pb.Event_KIND_JOINED, pb.Event_KIND_RECONNECTED:
			if p >= 1 && int(p) <= len(m.slots) {
				m.slots[p-1].awaited, m.slots[p-1].joined = true, true
			}
		case pb.Event_KIND_LEFT, pb.Event_KIND_DROPPED:
			if p >= 1 && int(p) <= len(m.slots) {
				m.slots[p-1].awaited = false
			}
		}
	}
	event := &pb.Event{Kind: pb.Event_KIND_RELAY_RESTARTED}
	if m.fileTicks > 0 {
		event.Tick = m.fileTicks - 1
	}
	if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: event}}); err != nil {
		m.releaseStream()
		return nil, err
	}
	return m, nil
}

// resumeLobby brings back a match that was in its lobby: in its lobby again, its lobby
// timeout counted from now; the players who had joined rejoin with their tokens.
func resumeLobby(s *Server, r *replay.Reopened) (*match, error) {
	m, err := reloadMatch(s, r)
	if err != nil {
		return nil, err
	}
	for i := range m.slots {
		m.slots[i].awaited = false
	}
	if err := m.writer.EndBlock(); err != nil {
		m.releaseStream()
		return nil, err
	}
	m.log.Info("match resumed in its lobby from its replay file", zap.Int64("torn_bytes_cut", r.Repaired), zap.Int64("reserved_bytes_cut", r.Reserved))
	return m, nil
}

// resumeMatch rebuilds the match an unfinished file holds: running, or in its lobby.
func resumeMatch(s *Server, r *replay.Reopened, now time.Time) (*match, error) {
	if !r.Replay.Started {
		return resumeLobby(s, r)
	}
	return resumeRunning(s, r, now)
}

// resumeRunning rebuilds a running match from its file. Its clock does not run yet: the
// match waits for its players (await), then goes on at the first tick none of them can
// have seen (resumeClock).
func resumeRunning(s *Server, r *replay.Reopened, now time.Time) (*match, error) {
	m, err := reloadMatch(s, r)
	if err != nil {
		return nil, err
	}
	opts := m.opts
	m.sched = lockstep.NewSchedule(lockstep.ScheduleOptions{
		MaxLead: opts.MaxLead, MaxCommandsPerTick: opts.MaxCommandsPerTick, MaxPayload: opts.MaxPayload, FirstTick: m.fileTicks,
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
			m.releaseStream()
			return nil, err
		}
	}
	m.newDesync(false) // its shadow would start mid-match: judged from the file instead
	m.resumed, m.waiting = true, true
	m.state = StateRunning
	m.status.state.Store(int32(StateRunning))
	m.status.ticks.Store(m.fileTicks)
	s.metrics.matchesRunning.Inc()
	m.log.Info("match resumed from its replay file; waiting for its players", zap.Uint64("file_ticks", m.fileTicks),
		zap.Int64("torn_bytes_cut", r.Repaired), zap.Int64("reserved_bytes_cut", r.Reserved))
	return m, nil
}

// maxSkip is the first tick no client can have seen: the relay that died may have sealed
// up to idle_flush-1 empty ticks past the end of its file (and no tick past max_ticks-1).
func (m *match) maxSkip() uint64 {
	first := m.fileTicks + uint64(max(m.writer.Start().GetIdleFlush(), 1)) - 1
	if m.maxTicks > 0 {
		first = min(first, m.maxTicks)
	}
	return max(first, m.fileTicks)
}

// await holds a resumed match's clock until every player connected when the relay died
// is back, or the rejoin grace passes; then resumeClock runs it.
func (m *match) await() {
	grace := time.NewTimer(m.srv.opts.RejoinGrace)
	defer grace.Stop()
	for m.state == StateRunning && m.waiting {
		if m.allBack() {
			m.resumeClock(time.Now())
			return
		}
		select {
		case ev := <-m.inbox:
			m.handle(ev, time.Now())
		case now := <-grace.C:
			m.resumeClock(now)
		case req := <-m.ctl:
			m.control(req)
		}
	}
}

func (m *match) allBack() bool {
	for i := range m.slots {
		if m.slots[i].awaited && !m.slots[i].back {
			return false
		}
	}
	return true
}

// resumeFirst is the tick a resumed match goes on at. Every tick missing from the file
// was sealed empty, and clients may have seen some: the players that are back said how
// far they got (resume_from), the others (left or dropped before the crash) saw no more
// than the file holds. So when every player connected at the crash is back, the match
// goes on right after what they saw, usually skipping nothing; if one is still away, it
// may have seen as far as the idle flush allows (maxSkip).
func (m *match) resumeFirst() (first uint64, exact bool) {
	if !m.allBack() {
		return m.maxSkip(), false
	}
	first = m.fileTicks
	for i := range m.slots {
		if m.slots[i].back {
			first = max(first, m.slots[i].resumeAt)
		}
	}
	return first, true
}

// resumeClock starts a resumed match's clock at resumeFirst: the skipped ticks recorded
// as empty (which every one of them was: an idle record after the RELAY_RESTARTED event),
// and sent to the players already back. If they reach max_ticks, the match may have played to its end
// before the crash: it ends there. Commands accepted for ticks not yet sealed when the
// relay died are lost: no client ever saw them in a frame.
func (m *match) resumeClock(now time.Time) {
	m.waiting = false
	first, exact := m.resumeFirst()
	before := m.stream.size
	if first > m.sched.NextTick() {
		o := m.opts
		m.sched = lockstep.NewSchedule(lockstep.ScheduleOptions{
			MaxLead: o.MaxLead, MaxCommandsPerTick: o.MaxCommandsPerTick, MaxPayload: o.MaxPayload, FirstTick: first,
		})
	}
	if err := m.writer.SkipTo(first); err != nil {
		m.recordingFailed(err)
		return
	}
	m.addPoint(first)
	if m.state != StateRunning {
		return
	}
	m.status.ticks.Store(first)
	for i := range m.slots {
		if s := m.slots[i].live; s != nil {
			m.sendStream(s, before, m.stream.size)
		}
	}
	m.log.Info("resumed match goes on", zap.Uint64("file_ticks", m.fileTicks), zap.Uint64("first_tick", first),
		zap.Bool("every_player_back", exact))
	if m.maxTicks > 0 && first >= m.maxTicks {
		m.end(pb.End_REASON_MAX_DURATION, fmt.Sprintf("the match reached its maximum duration of %d ticks (a player still away when its relay restarted may have seen it end)", m.maxTicks))
		return
	}
	// Tick `first` is sealed one to two tick periods from now (its phase's next instant,
	// then a period).
	m.startClock(first, now)
}

// pointsIn walks a stream's records and notes a point every pointEvery ticks or more
// (and one at the first tick record after the Start record and its events), always at a
// frame or idle record: a packed one needs the records before it. With no tick record
// yet, the one point is the end, where the reopened writer goes on with a whole one.
func pointsIn(b []byte) streamPoints {
	var points streamPoints
	var u stream.Unpacker // follows the ticks the records cover
	// From version 3 a point also follows a crc record, so a reader starting there
	// checks every block it reads.
	afterCRC := len(b) <= len(replay.Magic) || b[len(replay.Magic)] < stream.CRCVersion
	checked := afterCRC
	w := stream.NewWalker(b[min(startOffset, len(b)):])
	for w.Next() {
		off := startOffset + w.Offset()
		var msg pb.ServerMessage
		if w.Decode(&msg, nil) == nil {
			next := u.Next()
			anchor := (msg.GetFrame() != nil || msg.GetIdle() != nil) && afterCRC
			if u.Expand(&msg) != nil {
				break
			}
			if anchor && points.due(next) {
				points.add(streamPoint{next: next, off: off})
			}
			afterCRC = checked || msg.GetCrc() != nil
		}
	}
	if len(points) == 0 {
		points.add(streamPoint{next: 0, off: len(b)})
	}
	return points
}
