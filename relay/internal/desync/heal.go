package desync

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
// healed for ever. Without the sim, and only where the match allows it, the state comes
// from a player of the majority and the heal is unverified.

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

// phase is where a heal is.
type phase uint8

const (
	// collecting: a player of the majority is sending its state, chunk by chunk.
	collecting phase = iota + 1
	// waiting: the state is here, and waits for the inquiry under way to close (it asks
	// the wrong players about their wrong state).
	waiting
	// sent: the wrong players were sent the state; their answers are awaited.
	sent
)

func (p phase) String() string {
	switch p {
	case collecting:
		return "collecting"
	case waiting:
		return "waiting"
	case sent:
		return "sent"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// healing is the heal under way: the record it will be, the players it is for, the state
// (the arbiter's, a peer's as its chunks arrive, or none: a rebuild from tick 0), and the
// players sent it (in order) and whether each answered. id is the id of what was asked
// last: the peer's probe while collecting, the HealState once sent.
type healing struct {
	phase    phase
	id       uint32
	rec      *pb.Heal
	wrong    []uint32
	state    []byte
	rebuild  bool // no state: the players rebuild it from tick 0
	deadline uint64
	asked    []uint32
	answered []bool
	notes    []string
	counted  bool // the players sent it counted the heal (once, whatever the attempts)
	// A state from a peer: the players of the majority not asked yet, how many were, the
	// state's size, and the players who said it does not hash as promised.
	sources   []uint32
	attempts  int
	size      uint32
	wrongHash []uint32
}

// heal heals the players the arbiter found wrong with its state.
func (w *Work) heal(j *judgement) {
	h := w.newHealing(j.a.GetDesyncTick(), j.a.GetHash(), j.wrong)
	if len(j.state) > lockstep.MaxHealState {
		w.healDone(fmt.Sprintf("the state is %d bytes, more than a heal sends (%d)", len(j.state), lockstep.MaxHealState))
		return
	}
	// Without a state (the relay's sim cannot snapshot) the players rebuild it from tick
	// 0 and check it against the arbiter's hash all the same.
	h.state = j.state
	w.sendHeal()
}

// healFromPeer heals the players outside the majority of desync d with the state of a
// player of the majority, where the relay cannot judge it itself (no sim of its own) and
// the match allows it (plan): the players healed check that the state hashes to the
// majority's hash, so no single peer can put them in another game — but a colluding
// majority chooses that hash, so the heal is recorded as unverified.
func (w *Work) healFromPeer(d *pb.Desync) {
	var right *pb.HashGroup
	var wrong []uint32
	for _, g := range d.GetGroups() {
		if g.GetMajority() {
			right = g
			continue
		}
		for _, p := range g.GetPlayers() {
			if i := int(p) - 1; i >= 0 && i < len(w.heals) && w.heals[i] < maxHeals {
				wrong = append(wrong, p)
			}
		}
	}
	if right == nil || len(wrong) == 0 {
		return // no side to trust, or nobody left to heal: the split is reported only
	}
	slices.Sort(wrong)
	h := w.newHealing(d.GetTick(), right.GetHash(), wrong)
	h.rec.Unverified = true
	h.sources = slices.Clone(right.GetPlayers())
	w.askState()
}

func (w *Work) newHealing(tick, hash uint64, wrong []uint32) *healing {
	h := &healing{rec: &pb.Heal{DesyncTick: tick, Tick: tick, Hash: hash}, wrong: wrong}
	w.healing = h
	return h
}

// askState asks the next connected player of the majority for its state after the
// desync's tick; when there is none left to ask, the players rebuild it (once).
func (w *Work) askState() {
	h := w.healing
	for len(h.sources) > 0 && h.attempts < maxSources {
		p := h.sources[0]
		h.sources = h.sources[1:]
		if !w.live(p) {
			continue
		}
		w.probeID++
		h.phase, h.id, h.rec.Source, h.state, h.size, h.wrongHash = collecting, w.probeID, p, h.state[:0], 0, nil
		h.attempts++
		h.deadline = w.ticksFromNow(healTimeout)
		w.host.Send(p, &pb.ServerMessage{Msg: &pb.ServerMessage_Probe{Probe: &pb.Probe{
			Id: h.id, Step: pb.Probe_STEP_SNAPSHOT, DesyncTick: h.rec.Tick, At: h.rec.Tick,
		}}})
		return
	}
	if !h.rebuild {
		// Nobody sent a state the others took: they rebuild it from tick 0 on their own
		// frames, and check it against the majority's hash all the same.
		h.notes = append(h.notes, "no player of the majority sent a state the others took: they rebuild it from tick 0")
		h.rebuild, h.state, h.rec.Source = true, nil, 0
		w.sendHeal()
		return
	}
	w.healDone("")
}

// stateChunk takes a chunk of the state the heal asked a peer for.
func (w *Work) stateChunk(slot uint32, ev *pb.Evidence) {
	h := w.healing
	if slot != h.rec.Source {
		return
	}
	done, why := h.take(ev)
	switch {
	case why != "":
		h.notes = append(h.notes, why)
		w.askState()
	case done:
		w.sendHeal()
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
func (w *Work) sendHeal() {
	h := w.healing
	if w.inquiry != nil {
		h.phase = waiting
		return
	}
	// A fresh id, also after a peer's probe: an answer to anything asked before is
	// never taken for this state's.
	h.phase = sent
	w.probeID++
	h.id = w.probeID
	msg := &pb.ServerMessage{Msg: &pb.ServerMessage_HealState{HealState: &pb.HealState{
		Id: h.id, DesyncTick: h.rec.DesyncTick, Tick: h.rec.Tick, Hash: h.rec.Hash, State: h.state,
	}}}
	h.asked = h.asked[:0]
	for _, p := range h.wrong {
		i := int(p) - 1
		switch {
		case i < 0 || i >= len(w.heals):
		case !w.host.Live(p):
			h.notes = append(h.notes, fmt.Sprintf("player %d is not connected", p))
		case w.heals[i] >= maxHeals && !h.counted:
			h.notes = append(h.notes, fmt.Sprintf("player %d was healed %d times already: reported only", p, maxHeals))
		default:
			if !h.counted {
				w.heals[i]++ // another source's state, or a rebuild, is the same heal
			}
			w.host.Send(p, msg)
			h.asked = append(h.asked, p)
		}
	}
	h.counted = true
	h.answered = make([]bool, len(h.asked))
	h.deadline = w.ticksFromNow(healTimeout)
	if len(h.asked) == 0 {
		w.healDone("")
	}
}

// HealResult takes player slot's answer to the heal under way, if it is one. Its
// `through` is bounded by what the relay knows (the heal's tick, the last sealed tick),
// and the mark it sets covers that player's own reports only.
func (w *Work) HealResult(slot uint32, r *pb.HealResult) {
	h := w.healing
	if h == nil || h.phase != sent || r.GetId() != h.id {
		return // late or stray
	}
	i := slices.Index(h.asked, slot)
	if i < 0 || h.answered[i] {
		return
	}
	h.answered[i] = true
	last := w.host.NextTick() - 1 // the state is after h.rec.Tick, so a tick was sealed
	switch {
	case r.GetHealed() && (r.GetThrough() < h.rec.Tick || r.GetThrough() > last):
		h.refuse(slot, fmt.Sprintf("its answer was refused: healed through tick %d, outside the ticks %d..%d the heal covers", r.GetThrough(), h.rec.Tick, last))
	case r.GetHealed():
		h.rec.Healed = append(h.rec.Healed, slot)
		if r.GetRebuilt() {
			h.rec.Rebuilt = append(h.rec.Rebuilt, slot)
		}
		// Its reports up to there were of the wrong game: a desync they make is the one
		// healed, not a new one to judge (mended).
		w.healedBefore[slot-1] = max(w.healedBefore[slot-1], r.GetThrough()+1)
	default:
		h.refuse(slot, lockstep.PeerText(r.GetRefused(), lockstep.MaxEvidenceMissing))
		if r.GetWrongHash() {
			h.wrongHash = append(h.wrongHash, slot)
		}
	}
	if !slices.Contains(h.answered, false) {
		w.healAnswered()
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
func (w *Work) healAnswered() {
	h := w.healing
	if h.rec.Source != 0 && len(h.wrongHash) > 0 && len(h.rec.Healed) == 0 && !h.rebuild {
		h.notes = append(h.notes, fmt.Sprintf("players %v said the state player %d sent does not hash, in their sims, to the majority's hash (their word against its: the relay has no sim to check)", h.wrongHash, h.rec.Source))
		w.askState()
		return
	}
	w.healDone("")
}

// healTick gives up on what the heal under way waits for once its deadline passed: a
// peer's state (the next player of the majority is asked), or the players' answers.
func (w *Work) healTick(tick uint64) {
	h := w.healing
	switch {
	case h == nil || h.phase == waiting || tick < h.deadline:
	case h.phase == collecting:
		h.notes = append(h.notes, fmt.Sprintf("player %d did not send its state in time", h.rec.Source))
		w.askState()
	default:
		w.healDone("")
	}
}

// healDone records the heal under way (with note, if any, added to its own) in the stream
// and sends it to the players.
func (w *Work) healDone(note string) {
	h := w.healing
	w.healing = nil
	for i, p := range h.asked {
		if !h.answered[i] {
			h.rec.Refused = append(h.rec.Refused, &pb.HealRefusal{Player: p, Reason: "no answer in time"})
		}
	}
	h.rec.Note = strings.Join(slices.DeleteFunc(append(h.notes, note), func(p string) bool { return p == "" }), "; ")
	if len(h.rec.Healed) == 0 && h.phase == collecting {
		h.rec.Source = 0 // nobody sent a whole state
	}
	if !w.host.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Heal{Heal: h.rec}}) {
		return
	}
	w.log.Warn("heal", zap.Uint64("tick", h.rec.GetTick()), zap.Uint32("source", h.rec.GetSource()), zap.Uint32s("healed", h.rec.GetHealed()), zap.Int("refused", len(h.rec.GetRefused())), zap.String("note", h.rec.GetNote()))
}

// EndDetail is the End detail of a match ended at desync d (policy End).
func EndDetail(d *pb.Desync) string {
	s := fmt.Sprintf("the players desynced at tick %d:", d.GetTick())
	for i, g := range d.GetGroups() {
		if i > 0 {
			s += ";"
		}
		s += fmt.Sprintf(" players %v had %016x", g.GetPlayers(), g.GetHash())
	}
	return s + " (the relay ends a match at a desync: serve --on-desync=end)"
}
