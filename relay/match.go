package relay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
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
)

// event is what a session tells its match actor.
type event struct {
	kind    eventKind
	s       *session
	seq     uint32
	tick    uint64
	payload []byte
	hash    uint64
	over    bool
}

type endRequest struct {
	reason pb.End_Reason
	detail string
}

// slotState is a player slot as the match sees it.
type slotState struct {
	live      *session  // the slot's connection, or nil
	joined    bool      // joined at least once
	left      bool      // left on purpose
	droppedAt time.Time // when the live connection went away without leaving
	lastSeq   uint32
	hasSeq    bool
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

	// Owned by the actor.
	state      MatchState
	slots      []slotState
	spectators []*session
	lobbyLog   []*pb.Event
	sched      *lockstep.Schedule
	judge      *lockstep.Judge
	writer     *replay.Writer
	stream     streamLog
	points     []streamPoint // where to start reading the stream for a tick, ascending
	delayTicks uint64        // the spectator delay in ticks
	pool       *messagePool
	clock0     time.Time
	overVotes  map[uint64]int

	resumed  bool   // rebuilt from its replay file: no lobby
	maxTicks uint64 // the match ends after this many ticks (its maximum duration)

	// Set at creation, read by anyone.
	path    string // the replay file, or empty when not recording
	created time.Time

	status matchStatus
}

// matchStatus is what the API reads without asking the actor.
type matchStatus struct {
	state      atomic.Int32
	ticks      atomic.Uint64 // ticks sealed
	players    atomic.Int32  // connected players
	spectators atomic.Int32
	commands   atomic.Int64
	desyncs    atomic.Int64
	endReason  atomic.Int32
}

// streamLog is the match's stream as bytes: exactly the replay file's bytes. Bytes before
// len never change, so slices of it are shared with writers without copying.
type streamLog struct {
	b    []byte
	file *os.File
}

func (l *streamLog) Write(p []byte) (int, error) {
	if l.file != nil {
		if n, err := l.file.Write(p); err != nil {
			// The file may now end in part of a record (Reopen cuts it); the stream in
			// memory only ever holds whole records.
			return n, err
		}
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *streamLog) Sync() error {
	if l.file != nil {
		return l.file.Sync()
	}
	return nil
}

func (l *streamLog) Close() error {
	if l.file != nil {
		return l.file.Close()
	}
	return nil
}

// streamPoint says that stream bytes [0, off) hold every tick before next: a reader may
// start at off knowing ticks < next are covered. Points are whole-record boundaries.
type streamPoint struct {
	next uint64
	off  int
}

// pointEvery spaces the stream points: 30 ticks (1 s at 30 Hz). It is the granularity of
// resuming and of the spectator delay.
const pointEvery = 30

// startOffset is where the Start record begins in a stream: after the magic and the
// one-byte format version.
const startOffset = len(replay.Magic) + 1

// maxChunk bounds one catch-up message; chunks split at record boundaries.
const maxChunk = 32 << 10

func newMatch(srv *Server, id uuid.UUID, req CreateRequest, opts MatchOptions) *match {
	m := &match{
		id:        id,
		srv:       srv,
		log:       srv.log.With(zap.String("match", id.String())),
		opts:      opts,
		create:    req,
		inbox:     make(chan event, 64+32*req.Players),
		ctl:       make(chan endRequest, 1),
		done:      make(chan struct{}),
		slots:     make([]slotState, req.Players),
		pool:      newMessagePool(srv.opts.SendQueue + 16),
		overVotes: map[uint64]int{},
		created:   time.Now(),
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

// refuseLate answers the joins that reached the inbox as the actor stopped: the match
// has ended, and they must hear it rather than wait.
func (m *match) refuseLate() {
	for {
		select {
		case ev := <-m.inbox:
			if ev.kind == evJoin {
				ev.s.fatal(pb.ErrorCode_ERROR_CODE_NO_MATCH, websocket.StatusNormalClosure, "the match has ended")
			}
		default:
			return
		}
	}
}

// requestEnd asks the actor to end the match; it does not wait.
func (m *match) requestEnd(reason pb.End_Reason, detail string) {
	select {
	case m.ctl <- endRequest{reason, detail}:
	default: // an end is already requested
	}
}

func (m *match) run() {
	defer m.refuseLate()
	defer close(m.done)
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
			m.end(req.reason, req.detail)
		}
	}
	timer := time.NewTimer(time.Until(m.deadline(0)))
	defer timer.Stop()
	for m.state == StateRunning {
		select {
		case ev := <-m.inbox:
			m.handle(ev, time.Now())
		case now := <-timer.C:
			// Seal every tick whose deadline passed: after a stall the relay catches up
			// at once rather than drifting.
			for m.state == StateRunning && !now.Before(m.deadline(m.sched.NextTick())) {
				m.seal(now)
			}
			if m.state == StateRunning {
				timer.Reset(time.Until(m.deadline(m.sched.NextTick())))
			}
		case req := <-m.ctl:
			m.end(req.reason, req.detail)
		}
	}
}

// deadline is when tick t is sealed: clock0 + (t+1)/rate, in exact nanoseconds.
func (m *match) deadline(t uint64) time.Time {
	return m.clock0.Add(time.Duration((t + 1) * uint64(time.Second) / uint64(m.opts.TickRate)))
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

func (m *match) anyJoined() bool {
	for i := range m.slots {
		if m.slots[i].live != nil {
			return true
		}
	}
	return false
}

func (m *match) allConnected() bool {
	for i := range m.slots {
		if m.slots[i].live == nil {
			return false
		}
	}
	return true
}

func (m *match) handle(ev event, now time.Time) {
	switch ev.kind {
	case evJoin:
		m.join(ev.s, now)
	case evCommand:
		m.command(ev)
	case evChecksum:
		m.checksum(ev)
	case evLeave, evGone:
		m.gone(ev.s, ev.kind == evLeave, now)
	}
}

// join places a session: a player in its slot (replacing an older connection), a
// spectator in the audience; both get Welcome and, once the match runs, the stream so far.
func (m *match) join(s *session, now time.Time) {
	c := s.claims
	welcome := &pb.Welcome{MatchId: m.id.String(), InputDelay: uint32(m.opts.InputDelay)}
	if m.state == StateRunning {
		t := m.sched.NextTick()
		if t > 0 {
			welcome.SealedTick = &[]uint64{t - 1}[0]
		}
	}
	switch c.Role {
	case RolePlayer:
		if c.Slot < 1 || int(c.Slot) > len(m.slots) {
			s.fatal(pb.ErrorCode_ERROR_CODE_BAD_TOKEN, websocket.StatusPolicyViolation, fmt.Sprintf("token slot %d is not a slot of this %d-player match", c.Slot, len(m.slots)))
			return
		}
		slot := &m.slots[c.Slot-1]
		kind := pb.Event_KIND_JOINED
		if slot.joined {
			kind = pb.Event_KIND_RECONNECTED
		}
		if slot.live != nil {
			// One slot, one live connection: the newest wins.
			slot.live.kick(CloseReplaced, "replaced by a new connection with the same token")
		} else {
			m.srv.metrics.connPlayers.Inc()
			m.status.players.Add(1)
		}
		slot.live, slot.joined, slot.left = s, true, false
		welcome.Player, welcome.LastSeq = c.Slot, slot.lastSeq
		m.sendRecord(s, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: welcome}})
		m.event(kind, c.Slot)
		s.log.Info("player joined", zap.Stringer("kind", kind))
		switch m.state {
		case StateLobby:
			if m.allConnected() {
				m.begin(now)
			}
		case StateRunning:
			if _, err := m.judge.SetActive(c.Slot, true); err != nil {
				m.log.Error("judge refused an active player", zap.Error(err))
			}
			m.catchUp(s)
		}
	case RoleSpectator:
		if len(m.spectators) >= m.srv.opts.MaxSpectators {
			m.srv.metrics.connRejected.Inc()
			s.fatal(pb.ErrorCode_ERROR_CODE_FULL, websocket.StatusTryAgainLater, fmt.Sprintf("the match has %d spectators, its limit; try again later", len(m.spectators)))
			return
		}
		m.srv.metrics.connSpectators.Inc()
		m.status.spectators.Add(1)
		welcome.DelayTicks = m.delayTicks
		m.sendRecord(s, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: welcome}})
		s.sent = startOffset
		if m.state == StateRunning {
			s.sent = m.spectatorOffset(s)
		}
		m.spectators = append(m.spectators, s)
		if m.state == StateRunning {
			m.flushSpectators()
		}
	}
}

// catchUp sends a player the stream from the Start record, or from where it resumes, to
// the last sealed tick: the same bytes as the replay file.
func (m *match) catchUp(s *session) {
	if err := m.writer.FlushIdle(); err != nil {
		m.recordingFailed(err)
		return
	}
	m.sendStream(s, m.stream.b[m.resumeOffset(s):])
}

// resumeOffset is where s's stream starts: the Start record, or for a connection that
// resumes at tick r, the last point that covers every tick before r (the client skips the
// few ticks it already has).
func (m *match) resumeOffset(s *session) int {
	if s.resumeFrom == nil || *s.resumeFrom == 0 || len(m.points) == 0 {
		return startOffset
	}
	r := *s.resumeFrom
	i := sort.Search(len(m.points), func(i int) bool { return m.points[i].next > r }) - 1
	if i < 0 {
		return startOffset
	}
	return m.points[i].off
}

// spectatorOffset is where a joining spectator's stream starts: exactly where it says it
// stopped (resume_offset), if that is a record boundary it was released; else as for a
// player.
func (m *match) spectatorOffset(s *session) int {
	if s.resumeOffset == nil {
		return m.resumeOffset(s)
	}
	off := startOffset + int(min(*s.resumeOffset, uint64(len(m.stream.b))))
	if off > m.released() {
		return m.resumeOffset(s)
	}
	i := sort.Search(len(m.points), func(i int) bool { return m.points[i].off > off }) - 1
	at := startOffset
	if i >= 0 {
		at = m.points[i].off
	}
	for at < off {
		n, err := replay.SplitRecord(m.stream.b[at:])
		if err != nil {
			break
		}
		at += n
	}
	if at != off {
		return m.resumeOffset(s)
	}
	return off
}

// markPoint records a stream point at the current tick when nothing is pending in the
// writer and the last point is pointEvery ticks back.
func (m *match) markPoint() {
	next := m.sched.NextTick()
	if m.writer.Covered() != next {
		return
	}
	if n := len(m.points); n > 0 && next-m.points[n-1].next < pointEvery {
		return
	}
	m.points = append(m.points, streamPoint{next: next, off: len(m.stream.b)})
}

// released is how far into the stream spectators may read now: everything, or with a
// spectator delay, up to the last point at least delayTicks behind the live tick.
func (m *match) released() int {
	if m.delayTicks == 0 || m.state != StateRunning {
		return len(m.stream.b)
	}
	sealed := m.sched.NextTick()
	if sealed < m.delayTicks {
		return m.points[0].off
	}
	limit := sealed - m.delayTicks
	i := sort.Search(len(m.points), func(i int) bool { return m.points[i].next > limit }) - 1
	return m.points[max(i, 0)].off
}

// sendStream queues a slice of the stream (whole records) for s, as one queue entry the
// writer splits into messages. The slice shares the stream's bytes, which never change
// once written.
func (m *match) sendStream(s *session, b []byte) {
	if len(b) == 0 {
		return
	}
	msg := oneOff(b[:len(b):len(b)])
	msg.stream = true
	s.enqueue(msg)
	msg.release()
}

func (m *match) sendRecord(s *session, msg *pb.ServerMessage) {
	b, err := replay.AppendRecord(nil, msg)
	if err != nil {
		m.log.Error("encode", zap.Error(err))
		return
	}
	s.enqueue(oneOff(b))
}

// begin starts the match: Start record, replay file, schedule, judge, clock.
func (m *match) begin(now time.Time) {
	req := m.create
	start := &pb.Start{
		MatchId: m.id.String(), SimName: req.Sim, SimVersion: req.SimVersion, Seed: req.Seed,
		SimParams: req.Params, TickRate: uint32(m.opts.TickRate), InputDelay: uint32(m.opts.InputDelay),
		MaxLead: uint32(m.opts.MaxLead), ChecksumEvery: uint32(m.opts.ChecksumEvery),
		StartUnixMs: now.UnixMilli(), RelayBuild: m.srv.opts.Build, MaxTicks: m.maxTicks,
	}
	slots := make([]uint32, len(m.slots))
	for i := range m.slots {
		slots[i] = uint32(i + 1)
		name := ""
		if i < len(req.PlayerNames) {
			name = req.PlayerNames[i]
		}
		start.Players = append(start.Players, &pb.Player{Id: uint32(i + 1), Name: name})
	}
	start.ConfigHash = replay.ConfigHash(start)

	if m.path != "" {
		f, err := os.OpenFile(m.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err != nil {
			m.log.Error("cannot create the replay file", zap.Error(err))
			m.end(pb.End_REASON_RECORDING_FAILED, "cannot create the replay file: "+err.Error())
			return
		}
		m.stream.file = f
	}
	w, err := replay.NewWriter(&m.stream, start, &replay.WriterOptions{Sync: replay.SyncOnClose, IdleFlush: m.srv.opts.IdleFlush})
	if err != nil {
		m.end(pb.End_REASON_RECORDING_FAILED, err.Error())
		return
	}
	m.writer = w
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
	m.clock0 = now
	m.setState(StateRunning)
	for _, e := range m.lobbyLog {
		if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: e}}); err != nil {
			m.recordingFailed(err)
			return
		}
	}
	m.lobbyLog = nil
	// The first point: Start and the lobby's events, before tick 0. Spectators always
	// get at least this, whatever the delay.
	m.points = append(m.points, streamPoint{next: 0, off: len(m.stream.b)})
	for i := range m.slots {
		if s := m.slots[i].live; s != nil {
			m.sendStream(s, m.stream.b[startOffset:])
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
	met.tickLateness.Observe(now.Sub(m.deadline(f.Tick)).Seconds())

	msg := m.pool.get()
	msg.b = replay.AppendFrame(msg.b, f)
	// Record before broadcast: a frame reaches no socket before it is in the file.
	if err := m.writer.FrameRecord(f.Tick, len(f.Commands) == 0, msg.b); err != nil {
		msg.release()
		m.recordingFailed(err)
		return
	}
	depth := 0
	for i := range m.slots {
		if s := m.slots[i].live; s != nil {
			if s.enqueue(msg) {
				met.framesSent.Inc()
			}
			depth = max(depth, len(s.send))
		}
	}
	msg.release()
	met.queueDepth.Observe(float64(depth))
	m.status.ticks.Store(f.Tick + 1)

	m.judge.Sealed(f.Tick)
	if timeout := uint64(m.opts.JudgeTimeout); f.Tick >= timeout {
		for _, v := range m.judge.CloseThrough(f.Tick - timeout) {
			m.verdict(v)
		}
	}
	if len(m.spectators) > 0 && (f.Tick+1)%spectatorBatch == 0 {
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

// spectatorBatch: spectators get the stream every 6 ticks (200 ms at 30 Hz), in one write.
const spectatorBatch = 6

// flushSpectators sends every spectator the stream it may see and has not been sent yet,
// in one write. Spectators at the same position (all but those just joined) share one
// message: the same bytes, queued once per connection.
func (m *match) flushSpectators() {
	if len(m.spectators) == 0 || m.writer == nil {
		return
	}
	if m.state == StateRunning {
		if err := m.writer.FlushIdle(); err != nil {
			m.recordingFailed(err)
			return
		}
		m.markPoint()
	}
	target := m.released()
	var msg *message
	from := -1
	for _, s := range m.spectators {
		if s.sent >= target {
			continue
		}
		if s.sent != from {
			if msg != nil {
				msg.release()
			}
			b := m.stream.b[s.sent:target:target]
			msg, from = oneOff(b), s.sent
			msg.stream = true
		}
		s.enqueue(msg)
		s.sent = target
	}
	if msg != nil {
		msg.release()
	}
}

// allGone reports whether every slot left, or dropped longer ago than the rejoin grace.
func (m *match) allGone(now time.Time) bool {
	for i := range m.slots {
		sl := &m.slots[i]
		if sl.live != nil {
			return false
		}
		if !sl.left && sl.joined && now.Sub(sl.droppedAt) < m.srv.opts.RejoinGrace {
			return false
		}
		if !sl.joined && !sl.left {
			// Never joined: it does not keep the match alive.
			continue
		}
	}
	return true
}

func (m *match) command(ev event) {
	s := ev.s
	ack := &pb.CommandAck{Seq: ev.seq}
	slot := m.liveSlot(s)
	switch {
	case slot == nil:
		return // a replaced connection's late message
	case m.state != StateRunning:
		ack.Reject, ack.Detail = pb.Reject_REJECT_NOT_RUNNING, "the match has not started yet; wait for Start"
	case slot.hasSeq && ev.seq <= slot.lastSeq:
		ack.Reject, ack.Detail = pb.Reject_REJECT_DUPLICATE_SEQ, fmt.Sprintf("seq %d is not greater than your last seq %d; use a new, increasing seq for every command", ev.seq, slot.lastSeq)
		m.srv.metrics.reject(lockstep.DuplicateSeq)
	default:
		tick, err := m.sched.Submit(s.claims.Slot, ev.seq, ev.tick, ev.payload)
		if err != nil {
			var rej *lockstep.RejectError
			if asReject(err, &rej) {
				ack.Reject, ack.Detail = rejectCode(rej.Reason), rej.Detail
				m.srv.metrics.reject(rej.Reason)
			} else {
				ack.Reject, ack.Detail = pb.Reject_REJECT_UNSPECIFIED, err.Error()
				m.srv.metrics.rejectedOther.Inc()
			}
			break
		}
		slot.lastSeq, slot.hasSeq = ev.seq, true
		ack.Tick = tick
		m.srv.metrics.commands.Inc()
		m.status.commands.Add(1)
		if tick > ev.tick {
			m.srv.metrics.commandsLate.Inc()
		}
	}
	m.sendRecord(s, &pb.ServerMessage{Msg: &pb.ServerMessage_CommandAck{CommandAck: ack}})
}

func (m *match) liveSlot(s *session) *slotState {
	if s.claims.Role != RolePlayer || s.claims.Slot < 1 || int(s.claims.Slot) > len(m.slots) {
		return nil
	}
	slot := &m.slots[s.claims.Slot-1]
	if slot.live != s {
		return nil
	}
	return slot
}

func (m *match) checksum(ev event) {
	s := ev.s
	if m.liveSlot(s) == nil {
		return
	}
	if m.state != StateRunning {
		s.sendError(pb.ErrorCode_ERROR_CODE_BAD_CHECKSUM, "the match has not started; checksums follow sealed frames")
		return
	}
	v, done, err := m.judge.Report(s.claims.Slot, ev.tick, ev.hash)
	if errors.Is(err, lockstep.ErrJudged) {
		// A late report (a reconnecting or lagging peer catching up) is normal: the tick
		// was judged without it.
		return
	}
	if err != nil {
		s.sendError(pb.ErrorCode_ERROR_CODE_BAD_CHECKSUM, err.Error())
		return
	}
	if ev.over {
		m.overVotes[ev.tick]++
	}
	if done {
		m.verdict(v)
	}
}

// verdict records an agreed checkpoint, or records and broadcasts a desync.
func (m *match) verdict(v lockstep.Verdict) {
	over := m.overVotes[v.Tick]
	delete(m.overVotes, v.Tick)
	reporters := 0
	for _, g := range v.Groups {
		reporters += len(g.Players)
	}
	if v.Agreed {
		if err := m.writer.Checkpoint(v.Tick, v.Hash); err != nil {
			m.recordingFailed(err)
			return
		}
		m.srv.metrics.checkpoints.Inc()
		if reporters > 0 && over == reporters && len(v.Missing) == 0 {
			m.end(pb.End_REASON_SIM_FINISHED, fmt.Sprintf("the players' simulation ended at tick %d", v.Tick))
		}
		return
	}
	d := &pb.Desync{Tick: v.Tick, Missing: v.Missing}
	for i, g := range v.Groups {
		d.Groups = append(d.Groups, &pb.HashGroup{Hash: g.Hash, Players: g.Players, Majority: i == v.Majority})
	}
	rec := &pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: d}}
	if err := m.writer.Record(rec); err != nil {
		m.recordingFailed(err)
		return
	}
	m.srv.metrics.desyncs.Inc()
	m.status.desyncs.Add(1)
	m.log.Warn("desync", zap.Uint64("tick", v.Tick), zap.Int("groups", len(v.Groups)), zap.Int("majority", v.Majority), zap.Uint32s("missing", v.Missing))
	b, err := replay.AppendRecord(nil, rec)
	if err != nil {
		return
	}
	m.broadcast(b, false)
}

// broadcast queues the same bytes to every live player.
func (m *match) broadcast(b []byte, closeAfter bool) {
	msg := oneOff(b)
	msg.closeAfter = closeAfter
	for i := range m.slots {
		if s := m.slots[i].live; s != nil {
			s.enqueue(msg)
		}
	}
	msg.release()
}

// gone handles a connection that left (on purpose) or dropped.
func (m *match) gone(s *session, left bool, now time.Time) {
	if s.claims.Role == RoleSpectator {
		for i, x := range m.spectators {
			if x == s {
				m.spectators = append(m.spectators[:i], m.spectators[i+1:]...)
				m.srv.metrics.connSpectators.Dec()
				m.status.spectators.Add(-1)
				break
			}
		}
		return
	}
	slot := m.liveSlot(s)
	if slot == nil {
		if left && s.claims.Slot >= 1 && int(s.claims.Slot) <= len(m.slots) && m.slots[s.claims.Slot-1].live == nil {
			m.slots[s.claims.Slot-1].left = true
		}
		return
	}
	slot.live = nil
	slot.left = left
	slot.droppedAt = now
	m.srv.metrics.connPlayers.Dec()
	m.status.players.Add(-1)
	kind := pb.Event_KIND_DROPPED
	if left {
		kind = pb.Event_KIND_LEFT
	}
	m.event(kind, s.claims.Slot)
	if m.state == StateRunning {
		verdicts, err := m.judge.SetActive(s.claims.Slot, false)
		if err != nil {
			m.log.Error("judge", zap.Error(err))
		}
		for _, v := range verdicts {
			m.verdict(v)
		}
	}
}

// event records a connection event in the stream (held until Start in the lobby).
func (m *match) event(kind pb.Event_Kind, player uint32) {
	e := &pb.Event{Kind: kind, Player: player}
	switch m.state {
	case StateLobby:
		m.lobbyLog = append(m.lobbyLog, e)
	case StateRunning:
		if t := m.sched.NextTick(); t > 0 {
			e.Tick = t - 1
		}
		if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: e}}); err != nil {
			m.recordingFailed(err)
		}
	}
}

func (m *match) recordingFailed(err error) {
	m.log.Error("recording failed; ending the match", zap.Error(err))
	m.end(pb.End_REASON_RECORDING_FAILED, err.Error())
}

// end finishes the match: the end record closes the replay file, every connection gets
// End and is closed, and the actor loop stops.
func (m *match) end(reason pb.End_Reason, detail string) {
	if m.state == StateEnded {
		return
	}
	wasRunning := m.state == StateRunning
	m.setState(StateEnded)
	m.status.endReason.Store(int32(reason))
	if wasRunning && m.writer != nil {
		// Judge what the players already reported, so the file keeps it.
		if t := m.status.ticks.Load(); t > 0 {
			for _, v := range m.judge.CloseThrough(t - 1) {
				m.verdict(v)
			}
		}
	}
	end := &pb.End{Reason: reason, Detail: detail}
	recorded := false
	if wasRunning && m.writer != nil {
		before := len(m.stream.b)
		if err := m.writer.Close(end); err != nil {
			m.log.Error("closing the replay file", zap.Error(err))
		}
		recorded = len(m.stream.b) > before
	}
	if t := m.status.ticks.Load(); t > 0 {
		end.LastTick = t - 1
	}
	end.Index = nil // players need no file index
	b, err := replay.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: end}})
	if err != nil {
		m.log.Error("encode end", zap.Error(err))
	}
	if wasRunning && !recorded {
		// The file could not take the end record; spectators still get one.
		m.stream.b = append(m.stream.b, b...)
	}
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
	m.log.Info("match ended", zap.Stringer("reason", reason), zap.String("detail", detail), zap.Uint64("ticks", m.status.ticks.Load()))
	// An ended match stays listed for the API, but its stream and state go now (the
	// slices still queued keep their own bytes alive until written).
	m.stream.b, m.points, m.sched, m.judge, m.writer, m.overVotes = nil, nil, nil, nil, nil, nil
}

func asReject(err error, target **lockstep.RejectError) bool { return errors.As(err, target) }

func rejectCode(r lockstep.RejectReason) pb.Reject {
	switch r {
	case lockstep.TooFarAhead:
		return pb.Reject_REJECT_TOO_FAR_AHEAD
	case lockstep.TooManyCommands:
		return pb.Reject_REJECT_TOO_MANY_COMMANDS
	case lockstep.PayloadTooLarge:
		return pb.Reject_REJECT_PAYLOAD_TOO_LARGE
	case lockstep.DuplicateSeq:
		return pb.Reject_REJECT_DUPLICATE_SEQ
	}
	return pb.Reject_REJECT_UNSPECIFIED
}
