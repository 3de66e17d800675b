package relay

import (
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
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
	// healTimeout is how long the relay waits for the players' HealResults, in seconds
	// of the match's clock.
	healTimeout = 2
)

// healing is the heal under way: the record it will be, the players asked (in order)
// and whether each answered.
type healing struct {
	id       uint32
	rec      *pb.Heal
	asked    []uint32
	answered []bool
	deadline uint64
}

// heal sends the judged state to the players of the other groups (after an inquiry under
// way closed: it asks those players about their wrong state).
func (m *match) heal(j *judgement) {
	w := &m.desyncs
	if w.inquiry != nil {
		w.pendingHeal = j
		return
	}
	a := j.a
	w.probeID++
	h := &healing{id: w.probeID, rec: &pb.Heal{DesyncTick: a.GetDesyncTick(), Tick: a.GetDesyncTick(), Hash: a.GetHash()}}
	w.healing = h
	switch {
	case j.state == nil:
		m.healDone("the relay's sim cannot take a snapshot: nobody was sent the state")
		return
	case len(j.state) > lockstep.MaxHealState:
		m.healDone(fmt.Sprintf("the state is %d bytes, more than a heal sends (%d)", len(j.state), lockstep.MaxHealState))
		return
	}
	if w.heals == nil {
		w.heals = make([]int, len(m.slots))
	}
	msg := &pb.ServerMessage{Msg: &pb.ServerMessage_HealState{HealState: &pb.HealState{
		Id: h.id, DesyncTick: a.GetDesyncTick(), Tick: a.GetDesyncTick(), Hash: a.GetHash(), State: j.state,
	}}}
	var note []string
	for _, p := range j.wrong {
		i := int(p) - 1
		switch {
		case i < 0 || i >= len(m.slots):
			continue
		case m.slots[i].live == nil:
			note = append(note, fmt.Sprintf("player %d is not connected", p))
		case w.heals[i] >= maxHeals:
			note = append(note, fmt.Sprintf("player %d was healed %d times already: reported only", p, maxHeals))
		default:
			w.heals[i]++
			m.sendRecord(m.slots[i].live, msg)
			h.asked = append(h.asked, p)
		}
	}
	h.answered = make([]bool, len(h.asked))
	h.deadline = m.sched.NextTick() + healTimeout*uint64(m.opts.TickRate)
	h.rec.Note = joinNote(note)
	if len(h.asked) == 0 {
		m.healDone("")
	}
}

// healResult takes a player's answer to the heal under way, if it is one.
func (m *match) healResult(s *session, r *pb.HealResult) {
	h := m.desyncs.healing
	if h == nil || r.GetId() != h.id {
		return // late or stray
	}
	i := slices.Index(h.asked, s.claims.Slot)
	if i < 0 || h.answered[i] {
		return
	}
	h.answered[i] = true
	switch {
	case r.GetHealed():
		h.rec.Healed = append(h.rec.Healed, s.claims.Slot)
		// Its reports up to there were of the wrong game: a desync they make is the one
		// healed, not a new one to judge.
		m.desyncs.healedThrough = max(m.desyncs.healedThrough, r.GetThrough())
		m.desyncs.healedAny = true
	default:
		why := r.GetRefused()
		if len(why) > lockstep.MaxEvidenceMissing {
			why = why[:lockstep.MaxEvidenceMissing]
		}
		h.rec.Refused = append(h.rec.Refused, &pb.HealRefusal{Player: s.claims.Slot, Reason: why})
	}
	if !slices.Contains(h.answered, false) {
		m.healDone("")
	}
}

// healTick gives up on the heal's missing answers once its deadline passed.
func (m *match) healTick(tick uint64) {
	if h := m.desyncs.healing; h != nil && tick >= h.deadline {
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
	if note != "" {
		h.rec.Note = joinNote([]string{h.rec.Note, note})
	}
	appendShared(&m.status.heals, healInfo(h.rec))
	if m.writer == nil {
		return
	}
	rec := &pb.ServerMessage{Msg: &pb.ServerMessage_Heal{Heal: h.rec}}
	if err := m.writer.Record(rec); err != nil {
		m.recordingFailed(err)
		return
	}
	m.log.Warn("heal", zap.Uint64("tick", h.rec.GetTick()), zap.Uint32s("healed", h.rec.GetHealed()), zap.Int("refused", len(h.rec.GetRefused())), zap.String("note", h.rec.GetNote()))
	if b, err := stream.AppendRecord(nil, rec); err == nil {
		m.broadcast(b, false)
	}
}

// joinNote joins the non-empty parts of a note.
func joinNote(parts []string) string {
	s := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if s != "" {
			s += "; "
		}
		s += p
	}
	return s
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
