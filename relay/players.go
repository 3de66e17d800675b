// What players do to a match: join, send commands and checksums, leave; and what the
// match tells them back.

package relay

import (
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay/internal/desync"
	"github.com/tickrelay/tickrelay/stream"
)

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

// join places a session: a player in its slot (replacing an older connection), a
// spectator in the audience; both get Welcome and, once the match runs, the stream so far.
func (m *match) join(s *session, now time.Time) {
	c := s.claims
	welcome := &pb.Welcome{MatchId: m.id.String(), InputDelay: uint32(m.opts.InputDelay), Limits: m.limits()}
	if m.state == StateRunning {
		t := m.sealedTicks()
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
		if s.datagramFrames && m.recent == nil {
			m.recent = newRecentFrames(m.opts.TickRate)
		}
		if m.waiting && !slot.back {
			// The match's clock waits for this player: it goes on after what it has seen.
			slot.back = true
			if s.resumeFrom != nil {
				slot.resumeAt = min(*s.resumeFrom, m.maxSkip())
			}
		}
		welcome.Player, welcome.LastSeq = c.Slot, slot.lastSeq
		m.sendRecord(s, &pb.ServerMessage{Msg: &pb.ServerMessage_Welcome{Welcome: welcome}})
		m.event(kind, c.Slot)
		m.log.Info("player joined", zap.Uint32("player", c.Slot), zap.Stringer("kind", kind), zap.String("remote", s.remote))
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
		if r := s.resumeOffset; r != nil && startOffset+min(*r, maxResumeOffset) > uint64(m.released()) {
			// It resumes past what this match has released: a mirror still catching up
			// with the cluster's copy of the stream. It waits for the stream to reach its
			// byte, then goes on from exactly there (flushSpectators), not again from an
			// earlier point.
			s.sent, s.awaitSent = startOffset+int(min(*r, maxResumeOffset)), true
		} else if m.state == StateRunning {
			s.sent = m.spectatorOffset(s)
		}
		m.spectators = append(m.spectators, s)
		if m.state == StateRunning {
			// From now on memory keeps the tail the spectators have not had yet; the
			// joiner's past comes from the file.
			m.stream.setHold(true)
			m.flushSpectators()
		}
	}
}

// limits are what Welcome announces: the connection's and the match's caps.
func (m *match) limits() *pb.Limits {
	o := &m.srv.opts
	return &pb.Limits{
		MaxMessageBytes: uint32(o.MaxMessageBytes), MaxPayload: uint32(m.opts.MaxPayload),
		MessagesPerSecond: o.MessagesPerSecond, MessageBurst: uint32(o.MessageBurst),
		MaxCommandsPerTick: uint32(m.opts.MaxCommandsPerTick),
		MaxStrikes:         maxStrikes, StrikesPerSecond: float64(abuseRate),
	}
}

func (m *match) sendRecord(s *session, msg *pb.ServerMessage) {
	b, err := stream.AppendRecord(nil, msg)
	if err != nil {
		m.log.Error("encode", zap.Error(err))
		return
	}
	s.sendBytes(b)
}

// away reports whether the slot's player dropped (it did not leave) less than the
// rejoin grace ago: it is still a player of the match.
func (m *match) away(sl *slotState, now time.Time) bool {
	return sl.live == nil && sl.joined && !sl.left && now.Sub(sl.droppedAt) < m.srv.opts.RejoinGrace
}

// anyAway reports whether any player is away within its rejoin grace.
func (m *match) anyAway(now time.Time) bool {
	for i := range m.slots {
		if m.away(&m.slots[i], now) {
			return true
		}
	}
	return false
}

// allGone reports whether every slot left, or dropped longer ago than the rejoin grace.
func (m *match) allGone(now time.Time) bool {
	for i := range m.slots {
		sl := &m.slots[i]
		if sl.live != nil || m.away(sl, now) {
			return false
		}
		if !sl.joined && !sl.left {
			// Never joined: it does not keep the match alive.
			continue
		}
	}
	return true
}

// command places a player's command, or rejects it, and acks it; a command from a
// connection that is kicked, or too slow to take its ack, is dropped: it is not in the
// stream and gets no ack (session.placeCommand).
func (m *match) command(ev event) {
	slot := m.liveSlot(ev.s)
	if slot == nil {
		return // a replaced connection's late message
	}
	if !m.dedupe(ev, slot) {
		return
	}
	// While the match runs a frame follows within a tick: the ack can ride with it. Not
	// while a resumed match waits for its players: no frame comes until they are back;
	// nor to a player whose frames go as datagrams alone.
	ev.s.placeCommand(func() *message { return m.place(ev, slot) }, m.state == StateRunning && !m.waiting && ev.s.sendsFrames())
}

// place submits a command to the schedule and returns its encoded ack.
func (m *match) place(ev event, slot *slotState) *message {
	s := ev.s
	ack := &m.ack
	*ack = pb.CommandAck{Seq: ev.seq}
	switch {
	case m.state != StateRunning:
		ack.Reject, ack.Detail = pb.Reject_REJECT_NOT_RUNNING, "the match has not started yet; wait for Start"
	case m.waiting:
		ack.Reject, ack.Detail = pb.Reject_REJECT_NOT_RUNNING, fmt.Sprintf("the relay restarted: the match goes on when its players are back (at most %s); send again then", m.srv.opts.RejoinGrace)
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
	msg := m.pool.get()
	msg.b = stream.AppendAck(msg.b, ack)
	msg.frameWS()
	return msg
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
	if m.waiting {
		return // a resumed match judges from where its clock goes on
	}
	if ev.over && int64(ev.seq) > int64(len(m.slots)) {
		// Refused before the judge sees it: a report is taken whole or not at all, and a
		// winner that names no player is no outcome to record.
		s.sendError(pb.ErrorCode_ERROR_CODE_BAD_CHECKSUM, fmt.Sprintf("checksum for tick %d names winner %d, but the match has players 1..%d (0: none); the report was not counted", ev.tick, ev.seq, len(m.slots)))
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
	if ev.over || len(ev.payload) > 0 {
		vs := m.votes[ev.tick]
		if ev.over {
			vs.over++
			vs.overBy = append(vs.overBy, s.claims.Slot)
			vs.winners = append(vs.winners, ev.seq)
		}
		if len(ev.payload) > 0 {
			vs.failed++
			vs.failedBy = append(vs.failedBy, s.claims.Slot)
			if vs.failure == "" || s.claims.Slot < vs.slot {
				vs.slot, vs.failure = s.claims.Slot, string(ev.payload)
			}
		}
		m.votes[ev.tick] = vs
	}
	if done {
		m.verdicts(v)
	}
}

// votes are what the players said of their sims with a checkpoint's reports: how many
// said it is over, how many that it failed (and who), and the failure of the lowest slot
// that did.
type votes struct {
	over, failed int
	overBy       []uint32 // the checkpoint records who said it is over
	winners      []uint32 // and the winner each of them said, in overBy's order
	failedBy     []uint32
	slot         uint32
	failure      string
}

// sortOver puts overBy in ascending slot order, each winner staying with its player.
func (v *votes) sortOver() {
	for i := 1; i < len(v.overBy); i++ { // a few players: insertion sort, both slices at once
		for j := i; j > 0 && v.overBy[j] < v.overBy[j-1]; j-- {
			v.overBy[j], v.overBy[j-1] = v.overBy[j-1], v.overBy[j]
			v.winners[j], v.winners[j-1] = v.winners[j-1], v.winners[j]
		}
	}
}

// verdicts records the judge's verdicts in order. Several come at once when a player
// leaves or a timeout closes ticks; each is recorded before a verdict among them that
// ends the match (the sim finished or failed) ends it, and none after a recording
// failure has ended it (its writer is gone then).
func (m *match) verdicts(vs ...lockstep.Verdict) {
	var reason pb.End_Reason
	var detail string
	for _, v := range vs {
		if m.writer == nil {
			return
		}
		if r, d := m.verdict(v); r != pb.End_REASON_UNSPECIFIED && reason == pb.End_REASON_UNSPECIFIED {
			reason, detail = r, d
		}
	}
	if reason != pb.End_REASON_UNSPECIFIED {
		m.end(reason, detail)
	}
}

// verdict records an agreed checkpoint, or records and broadcasts a desync. When the
// players agreed and every one of them said its sim is over, or that it failed, it
// returns the reason to end the match and its detail.
func (m *match) verdict(v lockstep.Verdict) (pb.End_Reason, string) {
	said := m.votes[v.Tick]
	delete(m.votes, v.Tick)
	reporters := 0
	for _, g := range v.Groups {
		reporters += len(g.Players)
	}
	if v.Agreed {
		said.sortOver()
		cp := &pb.Checkpoint{Tick: v.Tick, Hash: v.Hash, Over: said.overBy, Winners: said.winners}
		if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: cp}}); err != nil {
			m.recordingFailed(err)
			return pb.End_REASON_UNSPECIFIED, ""
		}
		m.desync.Agreed(v.Tick, v.Hash)
		m.srv.metrics.checkpoints.Inc()
		// Every player of the match, not only the connected ones: a player away within
		// its rejoin grace has not said so, and one player's word is not everyone's.
		everyone := reporters > 0 && len(v.Missing) == 0 && !m.anyAway(time.Now())
		switch {
		case everyone && said.failed == reporters:
			return pb.End_REASON_SIM_FAILED, fmt.Sprintf("every player's simulation failed by tick %d; player %d's said: %s", v.Tick, said.slot, said.failure)
		case everyone && said.over == reporters:
			return pb.End_REASON_SIM_FINISHED, fmt.Sprintf("the players' simulation ended at tick %d", v.Tick)
		}
		return pb.End_REASON_UNSPECIFIED, ""
	}
	d := &pb.Desync{Tick: v.Tick, Missing: v.Missing}
	for i, g := range v.Groups {
		d.Groups = append(d.Groups, &pb.HashGroup{Hash: g.Hash, Players: g.Players, Majority: i == v.Majority})
	}
	// The desync work records it, with why it will not judge or heal it if it will not,
	// and starts what follows it.
	if !m.desync.Desync(d, said.failedBy) {
		return pb.End_REASON_UNSPECIFIED, ""
	}
	m.srv.metrics.desyncs.Inc()
	m.status.desyncs.Add(1)
	m.log.Warn("desync", zap.Uint64("tick", v.Tick), zap.Int("groups", len(v.Groups)), zap.Int("majority", v.Majority), zap.Uint32s("missing", v.Missing), zap.String("note", d.Note))
	if m.srv.opts.OnDesync == DesyncEnd {
		return pb.End_REASON_DESYNC, desync.EndDetail(d)
	}
	return pb.End_REASON_UNSPECIFIED, ""
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
				if len(m.spectators) == 0 {
					m.stream.setHold(false)
				}
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
		m.verdicts(verdicts...)
	}
}

// event records a connection event in the stream (held until Start in the lobby).
func (m *match) event(kind pb.Event_Kind, player uint32) {
	e := &pb.Event{Kind: kind, Player: player}
	switch m.state {
	case StateLobby:
		if m.writer == nil {
			m.lobbyLog = append(m.lobbyLog, e)
			return
		}
		// Recorded at once: a restart finds who joined the lobby.
		if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: e}}); err != nil {
			m.recordingFailed(err)
		}
	case StateRunning:
		if t := m.sched.NextTick(); t > 0 {
			e.Tick = t - 1
		}
		if err := m.writer.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: e}}); err != nil {
			m.recordingFailed(err)
		}
	}
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
