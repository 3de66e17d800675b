package relay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/internal/clock"
	"github.com/tickrelay/tickrelay/relay/internal/desync"
	"github.com/tickrelay/tickrelay/relay/internal/hooks"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
	"github.com/tickrelay/tickrelay/stream/dgram"
)

// MatchState is where a match is in its life.
type MatchState int32

const (
	StateLobby MatchState = iota
	StateRunning
	StateEnded
)

func (s MatchState) String() string {
	switch s {
	case StateLobby:
		return "lobby"
	case StateRunning:
		return "running"
	}
	return "ended"
}

type eventKind uint8

const (
	evJoin eventKind = iota
	evCommand
	evChecksum
	evLeave
	evGone
	// evResult carries, in data, what follows a desync: a player's *pb.Evidence or
	// *pb.HealResult, a worker's *judgement or *shadowed. One field for the four, so
	// that the commands and checksums the inbox mostly carries stay small.
	evResult
	evFetch // a player's Fetch: frames from tick on (fetch.go)
)

// event is what a session tells its match actor.
type event struct {
	kind  eventKind
	over  bool
	dgram bool // a command that came as a datagram (datagram.go)
	// seq is a command's sequence number, or a checksum's winner (meaningful with over):
	// one field for the two keeps the event at 72 bytes (inboxSize).
	seq     uint32
	s       *session
	tick    uint64
	hash    uint64
	payload []byte
	data    any // evResult
}

// inboxSize is a match's inbox length: a few messages a player. The actor drains it
// between seals and never waits on a sender, so a full inbox only makes the match's
// sessions wait (not reading their connections meanwhile) until the actor catches up.
// 72-byte events: 5.6 KiB for 4 players, a quarter of a lobby match's memory before it
// was cut down from 64+32*players.
func inboxSize(players int) int { return 16 + 16*players }

type endRequest struct {
	reason pb.End_Reason
	detail string
	// handOver: stop without an end record, for another cluster node to resume the
	// match (Server.HandOver); reason and detail are unused.
	handOver bool
}

// slotState is a player slot as the match sees it.
type slotState struct {
	live      *session  // the slot's connection, or nil
	joined    bool      // joined at least once
	left      bool      // left on purpose
	droppedAt time.Time // when the live connection went away without leaving
	lastSeq   uint32
	hasSeq    bool
	// dgSent: this tick's frames datagram went to the player (datagram.go).
	dgSent bool
	// seenSeq is the last seq handled of a player on WebTransport, placed or not: a
	// command's later copies (resent datagrams, the stream's) are dropped by it
	// (match.dedupe), and the player's frames datagrams ack it.
	seenSeq uint32
	hasSeen bool

	// A match resumed after a crash waits for the players connected when the relay died
	// (awaited) until each is back, with the next tick it needs (resumeAt).
	awaited, back bool
	resumeAt      uint64
}

// match is one match and its actor: a single goroutine (run) owns the schedule, the
// judge, the replay writer and the slots; sessions talk to it through inbox, the API
// through ctl and the status atomics.
type match struct {
	id     uuid.UUID
	srv    *Server
	log    *zap.Logger
	opts   MatchOptions
	create CreateRequest
	inbox  chan event
	ctl    chan endRequest
	done   chan struct{}
	// posting counts the posts under way, which refuseLate waits out: one that saw the
	// match running may put its event in the inbox after the actor stopped.
	posting atomic.Int32

	// Owned by the actor.
	state      MatchState
	slots      []slotState
	spectators []*session
	lobbyLog   []*pb.Event
	sched      *lockstep.Schedule
	judge      *lockstep.Judge
	writer     *replay.Writer
	stream     streamLog
	points     streamPoints // where to start reading the stream for a tick, ascending
	delayTicks uint64       // the spectator delay in ticks
	pool       *messagePool
	bundle     dgram.Bundler    // the last frames, for players on WebTransport (datagram.go)
	recent     *recentFrames    // the last seconds' frames, once a player takes frames as datagrams (fetch.go)
	dgbuf      []byte           // this tick's frames datagram
	clock      clock.Match      // when each tick is sealed
	phase      *clock.Ticker    // the relay clock phase it seals on; nil before it runs
	wake       <-chan struct{}  // phase's wake-ups, at each of its instants
	votes      map[uint64]votes // what the players said with a checkpoint's reports
	desync     *desync.Work     // what follows its desyncs: relay/internal/desync

	ack      pb.CommandAck // reused for every ack (encoded at once)
	resumed  bool          // rebuilt from its replay file: no lobby
	maxTicks uint64        // the match ends after this many ticks (its maximum duration)
	moved    bool          // stopped because it moved to another node (ErrMoved)
	mirror   *mirrorState  // set when the match runs on another node (see mirror.go)

	// Resumed after a crash: the clock waits for the players (await); the file covered
	// fileTicks ticks.
	waiting   bool
	fileTicks uint64

	// Set when the actor ends the match, read by late joiners once done is closed.
	endedAt  time.Time
	finished bool // the replay file has its end record

	// Set at creation, read by anyone.
	path    string // the replay file, or empty when not recording
	created time.Time

	status matchStatus

	// ticked holds the running match's commands and checksums until the actor takes
	// them (tickq.go); tickSpare is the actor's emptied slice for the next batch.
	ticked    tickQueue
	tickSpare []event
}

func newMatch(srv *Server, id uuid.UUID, req CreateRequest, opts MatchOptions) *match {
	m := &match{
		id:      id,
		srv:     srv,
		log:     srv.log.With(zap.String("match", id.String())),
		opts:    opts,
		create:  req,
		inbox:   make(chan event, inboxSize(req.Players)),
		ctl:     make(chan endRequest, 1),
		done:    make(chan struct{}),
		slots:   make([]slotState, req.Players),
		pool:    newMessagePool(srv.opts.SendQueue + 16),
		votes:   map[uint64]votes{},
		created: time.Now(),
		clock:   clock.NewMatch(opts.TickRate),
	}
	m.status.delays = make([]atomic.Int32, req.Players)
	for i := range m.status.delays {
		m.status.delays[i].Store(int32(opts.InputDelay))
	}
	m.delayTicks = uint64(opts.SpectatorDelay * time.Duration(opts.TickRate) / time.Second)
	m.maxTicks = uint64(opts.MaxDuration * time.Duration(opts.TickRate) / time.Second)
	if srv.opts.ReplayDir != "" {
		m.path = filepath.Join(srv.opts.ReplayDir, id.String()+".tkr")
	}
	return m
}

// post hands an event to the actor; false if the match has ended.
func (m *match) post(ev event) bool {
	m.posting.Add(1)
	defer m.posting.Add(-1)
	select {
	case <-m.done:
		return false
	default:
	}
	select {
	case m.inbox <- ev:
		return true
	case <-m.done:
		return false
	}
}

// requestEnd asks the actor to end the match; it does not wait.
func (m *match) requestEnd(reason pb.End_Reason, detail string) {
	select {
	case m.ctl <- endRequest{reason: reason, detail: detail}:
	default: // an end is already requested
	}
}

func (m *match) run() {
	defer m.refuseLate()
	defer close(m.done)
	defer m.releasePhase()
	if !m.resumed {
		m.setState(StateLobby)
	}
	lobby := time.NewTimer(m.opts.LobbyTimeout)
	defer lobby.Stop()
	for m.state == StateLobby {
		select {
		case ev := <-m.inbox:
			m.handle(ev, time.Now())
		case <-lobby.C:
			if m.anyJoined() {
				m.begin(time.Now())
			} else {
				m.end(pb.End_REASON_LOBBY_TIMEOUT, fmt.Sprintf("nobody joined within %s", m.opts.LobbyTimeout))
			}
		case req := <-m.ctl:
			m.control(req)
		}
	}
	if m.waiting {
		m.await()
	}
	m.ticked.open.Store(true)
	defer m.ticked.open.Store(false) // what is left in the queue is dropped, as the inbox's
	for m.state == StateRunning {
		select {
		case ev := <-m.inbox:
			if ev.kind != evCommand && ev.kind != evChecksum {
				m.takeTicked() // a session's commands before its later events
				if m.state != StateRunning {
					m.afterEnd(ev) // one of them ended the match
					continue
				}
			}
			m.handle(ev, time.Now())
		case <-m.wake:
			m.takeTicked()
			// Seal every tick whose deadline passed: after a stall the relay catches up
			// at once rather than drifting.
			now := time.Now()
			for m.state == StateRunning && !now.Before(m.deadline(m.sched.NextTick())) {
				m.seal(now)
			}
		case req := <-m.ctl:
			m.takeTicked()
			m.control(req)
		}
	}
}

// deadline is when tick t is sealed.
func (m *match) deadline(t uint64) time.Time { return m.clock.Deadline(t) }

// startClock starts the clock on the least used open phase of the relay's: tick first
// starts at the phase's next instant, at most a tick period from now, and is sealed a
// period later.
func (m *match) startClock(first uint64, now time.Time) {
	m.releasePhase()
	m.phase, m.clock, m.wake = m.srv.phases.Take(m.opts.TickRate, first, now)
}

func (m *match) releasePhase() {
	if m.phase != nil {
		m.srv.phases.Release(m.phase, m.wake)
		m.phase, m.wake = nil, nil
	}
}

func (m *match) setState(s MatchState) {
	old := m.state
	m.state = s
	m.status.state.Store(int32(s))
	g := m.srv.metrics
	if old == StateLobby && s != StateLobby {
		g.matchesLobby.Dec()
	}
	switch s {
	case StateLobby:
		g.matchesLobby.Inc()
	case StateRunning:
		g.matchesRunning.Inc()
	case StateEnded:
		if old == StateRunning {
			g.matchesRunning.Dec()
		}
		g.matchesEnded.Inc()
	}
}

func (m *match) handle(ev event, now time.Time) {
	switch ev.kind {
	case evJoin:
		m.join(ev.s, now)
	case evCommand, evChecksum:
		ev.s.inboxed.Add(-1)
		m.handleTicked(ev)
	case evLeave, evGone:
		m.gone(ev.s, ev.kind == evLeave, now)
	case evFetch:
		m.fetch(ev)
	case evResult:
		switch d := ev.data.(type) {
		case *pb.Evidence:
			if m.liveSlot(ev.s) != nil && m.desync != nil {
				m.desync.Evidence(ev.s.claims.Slot, d)
			}
		case *pb.HealResult:
			if m.liveSlot(ev.s) != nil && m.desync != nil {
				m.desync.HealResult(ev.s.claims.Slot, d)
			}
		default:
			if m.desync != nil {
				m.desync.Done(d) // a worker's job
			}
		}
	}
}

// startRecord is the match's Start record.
func (m *match) startRecord(now time.Time) *pb.Start {
	req := m.create
	start := &pb.Start{
		MatchId: m.id.String(), SimName: req.Sim, SimVersion: req.SimVersion, Seed: req.Seed,
		SimParams: req.Params, SimFuel: req.SimFuel, TickRate: uint32(m.opts.TickRate), InputDelay: uint32(m.opts.InputDelay),
		MaxLead: uint32(m.opts.MaxLead), ChecksumEvery: uint32(m.opts.ChecksumEvery),
		StartUnixMs: now.UnixMilli(), RelayBuild: m.srv.opts.Build, MaxTicks: m.maxTicks,
	}
	recordOptions(start, m.opts)
	for i := range m.slots {
		name := ""
		if i < len(req.PlayerNames) {
			name = req.PlayerNames[i]
		}
		start.Players = append(start.Players, &pb.Player{Id: uint32(i + 1), Name: name})
	}
	start.ConfigHash = replay.ConfigHash(start)
	return start
}

// record starts the match's stream, with the match in its lobby: on f, its new replay
// file (created with the match, so a restart finds a match still in its lobby), or when
// f is nil (not recording) on a temporary file.
func (m *match) record(f *os.File, now time.Time) error {
	stream, err := openStream(f, 0)
	if err != nil {
		// Without any file the stream stays in memory, whole.
		m.log.Warn("keeping the stream in memory", zap.Error(err))
	}
	m.stream = stream
	m.stream.copy = m.srv.clusterCopy(m.id)
	w, err := replay.NewWriter(&m.stream, m.startRecord(now), &replay.WriterOptions{Sync: replay.SyncOnClose, IdleFlush: m.srv.opts.IdleFlush, Lobby: true})
	if err != nil {
		return err
	}
	m.writer = w
	return nil
}

// releaseStream lets go of the match's stream (streamLog.release), saying so if its file
// could not be cut to its bytes.
func (m *match) releaseStream() {
	if m.stream.app != nil {
		if why := m.stream.app.FellBack(); why != nil {
			m.log.Info("the replay file was appended with write calls, not through a mapping", zap.Error(why))
		}
	}
	if err := m.stream.release(); err != nil {
		m.log.Warn("the replay file keeps its reserved zero-filled tail (readers take it for the file's end)", zap.Error(err))
	}
}

// begin starts the match: the started event, schedule, judge, clock.
func (m *match) begin(now time.Time) {
	if m.writer == nil {
		// Not recording: the stream starts now, with the lobby's events, as a file would.
		if err := m.record(nil, now); err != nil {
			m.end(pb.End_REASON_RECORDING_FAILED, err.Error())
			return
		}
		for _, e := range m.lobbyLog {
			if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: e}}); err != nil {
				m.recordingFailed(err)
				return
			}
		}
		m.lobbyLog = nil
	}
	m.stream.setHold(len(m.spectators) > 0)
	if err := m.writer.Begin(); err != nil {
		m.recordingFailed(err)
		return
	}
	slots := make([]uint32, len(m.slots))
	for i := range slots {
		slots[i] = uint32(i + 1)
	}
	m.sched = lockstep.NewSchedule(lockstep.ScheduleOptions{
		MaxLead: m.opts.MaxLead, MaxCommandsPerTick: m.opts.MaxCommandsPerTick, MaxPayload: m.opts.MaxPayload,
	})
	m.judge = lockstep.NewJudge(slots, lockstep.JudgeOptions{Every: uint64(m.opts.ChecksumEvery)})
	for i := range m.slots {
		if m.slots[i].live == nil {
			if _, err := m.judge.SetActive(uint32(i+1), false); err != nil {
				m.log.Error("judge", zap.Error(err))
			}
		}
	}
	m.startClock(0, now)
	m.newDesync(true)
	m.setState(StateRunning)
	// The first point: Start, the lobby's events and the started event, before tick 0.
	// Spectators always get at least this, whatever the delay.
	m.addPoint(0)
	if m.state != StateRunning {
		return
	}
	for i := range m.slots {
		if s := m.slots[i].live; s != nil {
			m.sendStream(s, startOffset, m.stream.size)
		}
	}
	m.flushSpectators()
	m.log.Info("match started", zap.Int("players", len(m.slots)), zap.String("replay", m.path))
}

// seal closes the next tick: record it, then hand the same bytes to every player.
func (m *match) seal(now time.Time) {
	f := m.sched.Seal()
	met := m.srv.metrics
	met.frames.Inc()
	// The clock now, not the timer's: how late the actor got to run is the lateness.
	late := time.Since(m.deadline(f.Tick))
	met.tickLateness.Observe(late.Seconds())
	m.srv.observeLateness(late, now)

	// Record before broadcast: a frame reaches no socket before it is in the file. The
	// file (and so spectators) gets it packed, the players as a Frame: two encodings,
	// each written as the same bytes to everyone who gets it.
	if err := m.writer.Frame(f); err != nil {
		m.recordingFailed(err)
		return
	}
	msg := m.pool.get()
	msg.b = stream.AppendFrame(msg.b, f)
	msg.frameWS()
	m.sendDatagrams(msg.b)
	if m.recent != nil {
		m.recent.add(f.Tick, msg.b)
	}
	depth := 0
	for i := range m.slots {
		if s := m.slots[i].live; s != nil && !s.sendsFrames() && m.slots[i].dgSent {
			met.framesSent.Inc() // as a datagram, above
		} else if s != nil {
			if s.deliver(msg) {
				met.framesSent.Inc()
			}
			depth = max(depth, len(s.send))
		}
	}
	msg.release()
	met.queueDepth.Observe(float64(depth))
	m.status.ticks.Store(f.Tick + 1)

	m.judge.Sealed(f.Tick)
	// After the frame reached every player: a step that times out now records and sends
	// what follows it (a report, the next probe, a heal) after this tick's frame, as the
	// file has it.
	m.desync.Sealed(f)
	if timeout := uint64(m.opts.JudgeTimeout); f.Tick >= timeout {
		m.verdicts(m.judge.CloseThrough(f.Tick - timeout)...)
	}
	if (len(m.spectators) > 0 || m.stream.copy != nil) && (f.Tick+1)%spectatorBatch == 0 {
		m.flushSpectators()
	} else if m.state == StateRunning {
		m.markPoint()
	}
	if m.state != StateRunning {
		return
	}
	if m.maxTicks > 0 && f.Tick+1 >= m.maxTicks {
		m.end(pb.End_REASON_MAX_DURATION, fmt.Sprintf("the match reached its maximum duration of %d ticks", m.maxTicks))
		return
	}
	if m.status.players.Load() == 0 && m.allGone(now) {
		m.end(pb.End_REASON_ALL_LEFT, "every player left")
	}
}

func (m *match) recordingFailed(err error) {
	if errors.Is(err, ErrMoved) {
		m.abandon(err)
		return
	}
	m.log.Error("recording failed; ending the match", zap.Error(err))
	m.end(pb.End_REASON_RECORDING_FAILED, err.Error())
}

// closeSpectators closes every spectator once it got what is queued for it.
func (m *match) closeSpectators() {
	for _, s := range m.spectators {
		msg := oneOff(nil)
		msg.closeAfter = true
		if !s.enqueue(msg) {
			s.kick(websocket.StatusNormalClosure, "match ended")
		}
		msg.release()
		m.srv.metrics.connSpectators.Dec()
	}
	m.spectators = nil
	m.status.spectators.Store(0)
}

// end finishes the match: the end record closes the replay file, every connection gets
// End and is closed, and the actor loop stops.
func (m *match) end(reason pb.End_Reason, detail string) {
	if m.state == StateEnded {
		return
	}
	wasRunning := m.state == StateRunning
	kept := false
	if !wasRunning && m.stream.tap != nil {
		// No end record: the webhook sender is told the end, which it stores before the
		// match is seen to end; a single relay's outbox keeps the file for the events it
		// holds (created, joins) until they are delivered.
		kept = m.stream.tap.EndedInLobby(hooks.EndReason(reason), detail, m.path)
	}
	if !wasRunning && m.writer != nil && m.path != "" && !kept {
		// A match that never started leaves no file.
		if err := os.Remove(m.path); err != nil {
			m.log.Warn("removing the replay file of a match that never started", zap.Error(err))
		}
	}
	m.setState(StateEnded)
	m.endedAt = time.Now()
	m.status.endReason.Store(int32(reason))
	if wasRunning && m.writer != nil {
		// Judge what the players already reported, so the file keeps it, and what the
		// forensics under way found so far.
		if t := m.status.ticks.Load(); t > 0 {
			m.verdicts(m.judge.CloseThrough(t - 1)...)
		}
		if m.writer != nil {
			m.desync.End()
		}
	}
	end := &pb.End{Reason: reason, Detail: detail}
	recorded := false
	if wasRunning && m.writer != nil {
		before := m.stream.size
		if err := m.writer.Close(end); errors.Is(err, ErrMoved) {
			m.abandon(err)
			return
		} else if err != nil {
			m.log.Error("closing the replay file", zap.Error(err))
		}
		recorded = m.stream.size > before
		m.finished = recorded && m.path != ""
	}
	if t := m.status.ticks.Load(); t > 0 {
		end.LastTick = t - 1
	}
	end.Index = nil // players need no file index
	b, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: end}})
	if err != nil {
		m.log.Error("encode end", zap.Error(err))
	}
	if wasRunning && !recorded {
		// The file could not take the end record; spectators still get one.
		m.stream.appendMemory(b)
	}
	m.backfill()
	m.recent = nil // nothing more to fetch
	m.broadcast(b, true)
	for i := range m.slots {
		if m.slots[i].live != nil {
			m.slots[i].live = nil
			m.srv.metrics.connPlayers.Dec()
			m.status.players.Add(-1)
		}
	}
	if wasRunning {
		// Spectators get the rest of the file, end record included (the delay no longer
		// hides anything), then are closed.
		m.flushSpectators()
	}
	m.closeSpectators()
	m.log.Info("match ended", zap.Stringer("reason", reason), zap.String("detail", detail), zap.Uint64("ticks", m.status.ticks.Load()))
	// An ended match stays listed for the API, but its stream and state go now (the
	// slices still queued keep their own bytes alive until written). Its stream points
	// (at most 16 KiB) stay for late joiners (joinEnded).
	m.releaseStream()
	m.sched, m.judge, m.writer, m.votes = nil, nil, nil, nil
}
