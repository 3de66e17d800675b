package relay

import (
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// Healing (docs/forensics.md, "Healing"): once the arbiter found which group of a desync
// computed the right state, the relay sends that state (its re-simulation's snapshot) to
// each player of the other groups, who restores it, checks its hash and re-applies the
// frames since; the players' answers are recorded in the stream as a Heal. One heal runs
// at a time, each waits healTimeout for the answers, and a player is healed at most
// maxHeals times a match: a peer whose sim goes wrong again and again is reported, not
// healed for ever.

// DesyncPolicy is what a relay does when the players of a match desync (serve
// --on-desync). Every policy records the desync and its forensics, and the arbiter's
// judgement where the relay has the sim.
type DesyncPolicy string

const (
	// DesyncHeal (the default, also ""): the players the arbiter found wrong are sent
	// the right state and go on in the right game.
	DesyncHeal DesyncPolicy = "heal"
	// DesyncReport: record and report only; the wrong players play on in their game.
	DesyncReport DesyncPolicy = "report"
	// DesyncEnd: end the match at the desync (End.REASON_DESYNC naming the tick and the
	// players of each group).
	DesyncEnd DesyncPolicy = "end"
)

// DesyncPolicies lists the policies, the default first.
var DesyncPolicies = []DesyncPolicy{DesyncHeal, DesyncReport, DesyncEnd}

// ParseDesyncPolicy returns the policy named s, or an error listing them.
func ParseDesyncPolicy(s string) (DesyncPolicy, error) {
	if p := DesyncPolicy(s); slices.Contains(DesyncPolicies, p) {
		return p, nil
	}
	return "", fmt.Errorf("unknown desync policy %q: use one of %v", s, DesyncPolicies)
}

// String, Set and Type make a *DesyncPolicy a command-line flag (pflag.Value).
func (p DesyncPolicy) String() string {
	if p == "" {
		return string(DesyncHeal)
	}
	return string(p)
}

func (p *DesyncPolicy) Set(s string) (err error) {
	*p, err = ParseDesyncPolicy(s)
	return err
}

func (p DesyncPolicy) Type() string { return "policy" }

func (p DesyncPolicy) heals() bool { return p == "" || p == DesyncHeal }

const (
	// maxHeals is how many times a player is healed in a match.
	maxHeals = 3
	// healTimeout is how long the relay waits for a peer's state, and then for the
	// players' HealResults, in seconds of the match's clock.
	healTimeout = 2
	// maxSources is how many players of the majority a heal asks for their state, one
	// after the other, when the first one's is refused or does not come.
	maxSources = 2
)

// healing is the heal under way: the record it will be, the players it is for, the state
// (the arbiter's, or a peer's as its chunks arrive), and the players sent it (in order)
// and whether each answered. id is the HealState's id, and a peer's probe's.
type healing struct {
	id       uint32
	rec      *pb.Heal
	wrong    []uint32
	state    []byte
	deadline uint64
	asked    []uint32
	answered []bool
	attempts int
	notes    []string
	// A state from a peer: the players of the majority not asked yet, the state's size,
	// whether it is still arriving, and whether a player refused it for its hash.
	sources    []uint32
	size       uint32
	collecting bool
	wrongHash  []uint32 // the players who said the state does not hash as promised
	counted    bool     // the players sent it counted the heal (once, whatever the attempts)
	rebuilding bool     // no state: the players rebuild it from tick 0
	// waiting: the state is here, and waits for the inquiry under way to close (it asks
	// the wrong players about their wrong state).
	waiting bool
}

// heal heals the players the arbiter found wrong with its state.
func (m *match) heal(j *judgement) {
	h := m.newHealing(j.a.GetDesyncTick(), j.a.GetHash(), j.wrong)
	if len(j.state) > lockstep.MaxHealState {
		m.healDone(fmt.Sprintf("the state is %d bytes, more than a heal sends (%d)", len(j.state), lockstep.MaxHealState))
		return
	}
	// Without a state (the relay's sim cannot snapshot) the players rebuild it from tick
	// 0 and check it against the arbiter's hash all the same.
	h.state = j.state
	m.sendHeal()
}

// healFromPeer heals the players outside the majority of desync d with the state of a
// player of the majority, where the relay cannot judge it itself (no sim of its own) and
// the match allows it (plan): the players healed check that the state hashes to the
// majority's hash, so no single peer can put them in another game — but a colluding
// majority chooses that hash, so the heal is recorded as unverified.
func (m *match) healFromPeer(d *pb.Desync) {
	w := &m.desyncs
	var right *pb.HashGroup
	var wrong []uint32
	for _, g := range d.GetGroups() {
		if g.GetMajority() {
			right = g
			continue
		}
		for _, p := range g.GetPlayers() {
			if i := int(p) - 1; i >= 0 && i < len(m.slots) && (w.heals == nil || w.heals[i] < maxHeals) {
				wrong = append(wrong, p)
			}
		}
	}
	if right == nil || len(wrong) == 0 {
		return // no side to trust, or nobody left to heal: the split is reported only
	}
	slices.Sort(wrong)
	h := m.newHealing(d.GetTick(), right.GetHash(), wrong)
	h.rec.Unverified = true
	h.sources = slices.Clone(right.GetPlayers())
	m.askState()
}

func (m *match) newHealing(tick, hash uint64, wrong []uint32) *healing {
	h := &healing{rec: &pb.Heal{DesyncTick: tick, Tick: tick, Hash: hash}, wrong: wrong}
	m.desyncs.healing = h
	return h
}

// askState asks the next connected player of the majority for its state after the
// desync's tick, or ends the heal when there is none left to ask.
func (m *match) askState() {
	w := &m.desyncs
	h := w.healing
	for len(h.sources) > 0 && h.attempts < maxSources {
		p := h.sources[0]
		h.sources = h.sources[1:]
		if m.slots[p-1].live == nil {
			continue
		}
		w.probeID++
		h.id, h.rec.Source, h.state, h.size, h.collecting, h.wrongHash = w.probeID, p, h.state[:0], 0, true, nil
		h.attempts++
		h.deadline = m.ticksFromNow(healTimeout)
		m.sendRecord(m.slots[p-1].live, &pb.ServerMessage{Msg: &pb.ServerMessage_Probe{Probe: &pb.Probe{
			Id: h.id, Step: pb.Probe_STEP_SNAPSHOT, DesyncTick: h.rec.Tick, At: h.rec.Tick,
		}}})
		return
	}
	if !h.rebuilding {
		// Nobody sent a state the others took: they rebuild it from tick 0 on their own
		// frames, and check it against the majority's hash all the same.
		h.notes = append(h.notes, "no player of the majority sent a state the others took: they rebuild it from tick 0")
		h.rebuilding, h.collecting, h.state, h.rec.Source = true, false, nil, 0
		m.sendHeal()
		return
	}
	m.healDone("")
}

// stateChunk takes a chunk of the state the heal asked a peer for.
func (m *match) stateChunk(s *session, ev *pb.Evidence) {
	h := m.desyncs.healing
	if s.claims.Slot != h.rec.Source {
		return
	}
	done, why := h.take(ev)
	switch {
	case why != "":
		h.notes = append(h.notes, why)
		m.askState()
	case done:
		h.collecting = false
		m.sendHeal()
	}
}

// take adds a chunk of the peer's state: it says whether the state is whole, or why the
// chunk ends the peer's turn (it could not send it; out of order or past the bounds).
func (h *healing) take(ev *pb.Evidence) (done bool, why string) {
	src := h.rec.Source
	size, off, chunk := ev.GetStateSize(), ev.GetStateOffset(), ev.GetState()
	switch {
	case ev.GetMissing() != "":
		return false, fmt.Sprintf("player %d could not send its state: %s", src, lockstep.PeerText(ev.GetMissing(), lockstep.MaxEvidenceMissing))
	case size == 0 || size > lockstep.MaxPeerState || len(chunk) == 0 || len(chunk) > lockstep.StateChunk ||
		off != uint32(len(h.state)) || (h.size != 0 && size != h.size) || uint64(off)+uint64(len(chunk)) > uint64(size):
		return false, fmt.Sprintf("player %d sent its state out of order or past the bounds (%d bytes in chunks of %d)", src, lockstep.MaxPeerState, lockstep.StateChunk)
	}
	h.size = size
	h.state = append(h.state, chunk...)
	return uint32(len(h.state)) == size, ""
}

// sendHeal sends the heal's state to the wrong players, once no inquiry is under way.
func (m *match) sendHeal() {
	w := &m.desyncs
	h := w.healing
	if h.waiting = w.inquiry != nil; h.waiting {
		return
	}
	if h.rec.Source == 0 {
		w.probeID++
		h.id = w.probeID
	}
	if w.heals == nil {
		w.heals = make([]int, len(m.slots))
	}
	msg := &pb.ServerMessage{Msg: &pb.ServerMessage_HealState{HealState: &pb.HealState{
		Id: h.id, DesyncTick: h.rec.DesyncTick, Tick: h.rec.Tick, Hash: h.rec.Hash, State: h.state,
	}}}
	h.asked = h.asked[:0]
	for _, p := range h.wrong {
		i := int(p) - 1
		switch {
		case i < 0 || i >= len(m.slots):
		case m.slots[i].live == nil:
			h.notes = append(h.notes, fmt.Sprintf("player %d is not connected", p))
		case w.heals[i] >= maxHeals && !h.counted:
			h.notes = append(h.notes, fmt.Sprintf("player %d was healed %d times already: reported only", p, maxHeals))
		default:
			if !h.counted {
				w.heals[i]++ // another source's state, or a rebuild, is the same heal
			}
			m.sendRecord(m.slots[i].live, msg)
			h.asked = append(h.asked, p)
		}
	}
	h.counted = true
	h.answered = make([]bool, len(h.asked))
	h.deadline = m.ticksFromNow(healTimeout)
	if len(h.asked) == 0 {
		m.healDone("")
	}
}

// healResult takes a player's answer to the heal under way, if it is one.
func (m *match) healResult(s *session, r *pb.HealResult) {
	h := m.desyncs.healing
	if h == nil || h.collecting || h.waiting || r.GetId() != h.id {
		return // late or stray
	}
	i := slices.Index(h.asked, s.claims.Slot)
	if i < 0 || h.answered[i] {
		return
	}
	h.answered[i] = true
	slot := s.claims.Slot
	last := m.sched.NextTick() - 1 // the state is after h.rec.Tick, so a tick was sealed
	switch {
	case r.GetHealed() && (r.GetThrough() < h.rec.Tick || r.GetThrough() > last):
		h.refuse(slot, fmt.Sprintf("its answer was refused: healed through tick %d, outside the ticks %d..%d the heal covers", r.GetThrough(), h.rec.Tick, last))
	case r.GetHealed():
		h.rec.Healed = append(h.rec.Healed, slot)
		if r.GetRebuilt() {
			h.rec.Rebuilt = append(h.rec.Rebuilt, slot)
		}
		// Its reports up to there were of the wrong game: a desync they make is the one
		// healed, not a new one to judge. Its own reports only (desyncWork.mended).
		w := &m.desyncs
		if w.healedBefore == nil {
			w.healedBefore = make([]uint64, len(m.slots))
		}
		w.healedBefore[slot-1] = max(w.healedBefore[slot-1], r.GetThrough()+1)
	default:
		h.refuse(slot, lockstep.PeerText(r.GetRefused(), lockstep.MaxEvidenceMissing))
		if r.GetWrongHash() {
			h.wrongHash = append(h.wrongHash, slot)
		}
	}
	if !slices.Contains(h.answered, false) {
		m.healAnswered()
	}
}

// refuse records a player's refusal of the heal's state, once: a player refusing each
// state the same way is one refusal, not one a source.
func (h *healing) refuse(player uint32, reason string) {
	r := &pb.HealRefusal{Player: player, Reason: reason}
	if !slices.ContainsFunc(h.rec.Refused, func(x *pb.HealRefusal) bool { return proto.Equal(x, r) }) {
		h.rec.Refused = append(h.rec.Refused, r)
	}
}

// healAnswered ends a heal whose players all answered (or stopped being waited for). A
// peer's state that nobody took, some saying it does not hash as promised, is tried no
// further: the next player of the majority is asked for its own. Who is wrong, the
// sender or those who refused, the relay cannot tell without a sim, so the note says who
// said what and names nobody a forger.
func (m *match) healAnswered() {
	h := m.desyncs.healing
	if h.rec.Source != 0 && len(h.wrongHash) > 0 && len(h.rec.Healed) == 0 && !h.rebuilding {
		h.notes = append(h.notes, fmt.Sprintf("players %v said the state player %d sent does not hash, in their sims, to the majority's hash (their word against its: the relay has no sim to check)", h.wrongHash, h.rec.Source))
		m.askState()
		return
	}
	m.healDone("")
}

// healTick gives up on what the heal under way waits for once its deadline passed: a
// peer's state (the next player of the majority is asked), or the players' answers.
func (m *match) healTick(tick uint64) {
	h := m.desyncs.healing
	switch {
	case h == nil || h.waiting || tick < h.deadline:
	case h.collecting:
		h.notes = append(h.notes, fmt.Sprintf("player %d did not send its state in time", h.rec.Source))
		m.askState()
	default:
		m.healDone("")
	}
}

// healDone records the heal under way (with note, if any, added to its own) in the stream
// and sends it to the players.
func (m *match) healDone(note string) {
	h := m.desyncs.healing
	m.desyncs.healing = nil
	for i, p := range h.asked {
		if !h.answered[i] {
			h.rec.Refused = append(h.rec.Refused, &pb.HealRefusal{Player: p, Reason: "no answer in time"})
		}
	}
	h.rec.Note = strings.Join(slices.DeleteFunc(append(h.notes, note), func(p string) bool { return p == "" }), "; ")
	if len(h.rec.Healed) == 0 && h.collecting {
		h.rec.Source = 0 // nobody sent a whole state
	}
	appendShared(&m.status.heals, healInfo(h.rec))
	if m.writer == nil || !m.recordBroadcast(&pb.ServerMessage{Msg: &pb.ServerMessage_Heal{Heal: h.rec}}) {
		return
	}
	m.log.Warn("heal", zap.Uint64("tick", h.rec.GetTick()), zap.Uint32("source", h.rec.GetSource()), zap.Uint32s("healed", h.rec.GetHealed()), zap.Int("refused", len(h.rec.GetRefused())), zap.String("note", h.rec.GetNote()))
}

// desyncEnd is the End detail of a match ended at a desync (DesyncEnd).
func desyncEnd(d *pb.Desync) string {
	s := fmt.Sprintf("the players desynced at tick %d:", d.GetTick())
	for i, g := range d.GetGroups() {
		if i > 0 {
			s += ";"
		}
		s += fmt.Sprintf(" players %v had %016x", g.GetPlayers(), g.GetHash())
	}
	return s + " (the relay ends a match at a desync: serve --on-desync=end)"
}
