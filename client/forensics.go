package client

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// answer is this player's Evidence for one step of the relay's desync forensics: the
// state after the ticks asked for, rebuilt from the History's snapshot of the agreed
// checkpoint (docs/forensics.md). What it cannot give it says in Evidence.missing.
func (s *Session) answer(p *pb.Probe) *pb.Evidence {
	ev := &pb.Evidence{Probe: p.GetId()}
	missing := func(format string, args ...any) *pb.Evidence {
		ev.Missing = lockstep.CutText(fmt.Sprintf(format, args...), lockstep.MaxEvidenceMissing)
		return ev
	}
	if s.hist == nil {
		return missing("this session keeps no history: it is not a player of a started match")
	}
	if p.GetStep() == pb.Probe_STEP_SNAPSHOT {
		return s.stateAfter(ev, p.GetAt())
	}
	agreed, hasAgreed, desync := p.GetAgreedTick(), p.GetHasAgreed(), p.GetDesyncTick()
	first := uint64(0)
	if hasAgreed {
		first = agreed + 1
	}
	if desync < first || desync-first >= lockstep.MaxEvidenceHashes || desync >= s.peer.Next() {
		return missing("ticks %d..%d cannot be described here (applied through %d; at most %d at once)", first, desync, int64(s.peer.Next())-1, lockstep.MaxEvidenceHashes)
	}
	at := p.GetAt()
	if p.GetStep() != pb.Probe_STEP_HASHES && (at < first || at > desync) {
		return missing("tick %d is not between %d and %d", at, first, desync)
	}
	peer, err := s.hist.Rebuild(agreed, hasAgreed, s.peer.Every())
	if err != nil {
		return missing("%v", err)
	}
	defer sim.Close(peer.Sim())
	switch p.GetStep() {
	case pb.Probe_STEP_HASHES:
		err = s.hist.Replay(peer, desync, func(uint64) { ev.Hashes = append(ev.Hashes, peer.Hash()) })
	case pb.Probe_STEP_STATE, pb.Probe_STEP_LINES:
		err = s.hist.Replay(peer, at, nil)
	default:
		return missing("a probe step (%d) this client does not know", p.GetStep())
	}
	if err != nil {
		return missing("rebuilding the state: %v", err)
	}
	if p.GetStep() == pb.Probe_STEP_HASHES {
		return ev
	}
	if p.GetStep() == pb.Probe_STEP_STATE {
		if sh, ok := peer.Sim().(sim.SubHasher); ok {
			for _, h := range sh.SubHashes() {
				if len(ev.Subhashes) == lockstep.MaxEvidenceSubHashes {
					break
				}
				ev.Subhashes = append(ev.Subhashes, &pb.NamedHash{Name: lockstep.CutText(h.Name, lockstep.MaxEvidenceName), Hash: h.Hash})
			}
		}
	}
	lines, why := dumpLines(peer.Sim())
	if why != "" {
		return missing("%s", why) // with the sub-hashes, if any
	}
	if p.GetStep() == pb.Probe_STEP_STATE {
		for _, l := range lines[:min(len(lines), lockstep.MaxEvidenceLineHashes)] {
			ev.LineHashes = append(ev.LineHashes, lockstep.LineHash(l))
		}
		return ev
	}
	from := int(min(p.GetFrom(), uint32(len(lines))))
	to := min(from+int(min(p.GetCount(), lockstep.MaxEvidenceLines)), len(lines))
	for _, l := range lines[from:to] {
		ev.Lines = append(ev.Lines, lockstep.CutText(l, lockstep.MaxEvidenceLineBytes))
	}
	return ev
}

// stateAfter answers a STEP_SNAPSHOT probe: the state after tick at, rebuilt from the
// History, whole in ev.State (answerAll sends it in chunks).
func (s *Session) stateAfter(ev *pb.Evidence, at uint64) *pb.Evidence {
	switch {
	case at >= s.peer.Next():
		ev.Missing = fmt.Sprintf("tick %d is not applied here yet", at)
		return ev
	case s.simErr.Load() != nil:
		ev.Missing = "the sim failed"
		return ev
	}
	peer, err := s.hist.Rebuild(at, true, s.peer.Every())
	if err != nil {
		ev.Missing = lockstep.CutText(err.Error(), lockstep.MaxEvidenceMissing)
		return ev
	}
	defer sim.Close(peer.Sim())
	sn, ok := peer.Sim().(sim.Snapshotter)
	if !ok {
		ev.Missing = "the sim cannot take a snapshot"
	} else {
		if ev.State = sn.Snapshot(); len(ev.State) > lockstep.MaxPeerState {
			ev.State, ev.Missing = nil, fmt.Sprintf("the state is %d bytes, more than a peer sends (%d)", len(ev.State), lockstep.MaxPeerState)
		}
	}
	return ev
}

// healFromStart heals by rebuilding the state from tick 0 (lockstep.History.HealFromStart),
// for a sim that cannot restore a snapshot or when the relay sent none. A sim that can
// takes the rebuilt state in place (its History starting again from it); one that cannot
// is replaced by the rebuilt one (Session.Sim returns it from now on).
func (s *Session) healFromStart(after, want uint64) (uint64, error) {
	q, err := s.hist.HealFromStart(s.peer, after, want)
	if err != nil {
		return 0, err
	}
	through := q.Next() - 1
	if sn, ok := q.Sim().(sim.Snapshotter); ok && isSnapshotter(s.sim) {
		defer sim.Close(q.Sim())
		return s.hist.Heal(s.peer, through, sn.Snapshot(), q.Hash())
	}
	old := s.sim
	s.peer, s.sim = q, q.Sim()
	sim.Close(old)
	return through, nil
}

func isSnapshotter(s sim.Sim) bool {
	_, ok := s.(sim.Snapshotter)
	return ok
}

// answerAll is this player's answer to a probe as the messages it sends: one Evidence, or
// a state (STEP_SNAPSHOT) in chunks of at most lockstep.StateChunk bytes.
func (s *Session) answerAll(p *pb.Probe) []*pb.Evidence {
	ev := s.answer(p)
	state := ev.GetState()
	if len(state) == 0 {
		ev.State = nil
		return []*pb.Evidence{ev}
	}
	var out []*pb.Evidence
	for off := 0; off < len(state); off += lockstep.StateChunk {
		out = append(out, &pb.Evidence{Probe: ev.GetProbe(), State: state[off:min(off+lockstep.StateChunk, len(state))],
			StateOffset: uint32(off), StateSize: uint32(len(state))})
	}
	return out
}

// dumpLines is s's dump as lines, or why there is none.
func dumpLines(s sim.Sim) ([]string, string) {
	d, ok := s.(sim.Dumper)
	if !ok {
		return nil, "the sim writes no dump" // the TypeScript client says the same
	}
	var b bytes.Buffer
	if err := d.Dump(&b); err != nil {
		return nil, "the sim's dump failed: " + err.Error()
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), ""
}

// heal restores the right state the relay sent this player after a desync, through the
// History (which refuses a state whose hash is not the one promised), and says what
// happened in the HealResult.
func (s *Session) heal(h *pb.HealState) *pb.HealResult {
	r := &pb.HealResult{Id: h.GetId()}
	var err error
	switch {
	case s.hist == nil:
		err = fmt.Errorf("%w: this session keeps no history: it is not a player of a started match", lockstep.ErrHealRefused)
	case s.simErr.Load() != nil:
		err = fmt.Errorf("%w: the sim failed", lockstep.ErrHealRefused)
	case len(h.GetState()) == 0 || !isSnapshotter(s.sim):
		r.Through, err = s.healFromStart(h.GetTick(), h.GetHash())
		r.Rebuilt = err == nil
	default:
		r.Through, err = s.hist.Heal(s.peer, h.GetTick(), h.GetState(), h.GetHash())
	}
	switch {
	case errors.Is(err, lockstep.ErrSimFailed):
		r.Healed = true // it is in the right game, where its sim fails: say so as apply does
		s.simFailed(err)
	case err != nil:
		r.Refused = lockstep.CutText(err.Error(), lockstep.MaxEvidenceMissing)
		var wrong *lockstep.HealHashError
		r.WrongHash = errors.As(err, &wrong)
	default:
		r.Healed = true
	}
	if r.Healed {
		s.headMu.Lock()
		if s.head != nil && s.head.Rebase() != nil {
			s.stopHead()
		}
		s.headMu.Unlock()
	}
	if s.opts.OnHealed != nil {
		s.opts.OnHealed(s, r.GetThrough(), err)
	}
	return r
}
