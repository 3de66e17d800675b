package relay

import (
	"fmt"
	"slices"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// What follows a desync beyond its record and its forensics (docs/forensics.md, "Lying
// peers"). A relay that has the match's sim is the referee: it judges by its own
// re-simulation and heals only toward the state that computed, and when it cannot judge
// (its budget for the match is spent, every worker is busy, nothing is recorded to
// re-simulate) it reports the desync and says why — it never falls back to the majority,
// which may be a colluding one. A relay without the sim can only count: it heals the
// minority toward the majority's hash only where the match's creator allowed it
// (MatchOptions.PeerHeals), marks every such heal unverified, and never heals toward a
// majority whose simulation failed.

// plan decides what follows desync d: it returns the step to take once d is recorded
// (judge it, or heal it from a peer), or nil and, when the relay would have acted but
// will not, why (the Desync's note). failedBy are the players who said their sim failed
// by d's tick. A plan to judge holds one of the relay's arbiter workers until it runs or
// is cancelled (cancelPlan).
func (m *match) plan(d *pb.Desync, failedBy []uint32) (func(), string) {
	w := &m.desyncs
	switch {
	case m.state != StateRunning, w.mended(d):
		return nil, "" // ending; or the healed players' reports from before their heal
	case m.canJudge():
		return m.planJudgement(d)
	case !m.srv.opts.OnDesync.heals():
		return nil, ""
	case !m.opts.peerHeals():
		return nil, "not healed: the relay has no sim of this match to judge it, and the match does not allow heals from peers (peer_heals), which only a majority's word vouches for"
	}
	right := slices.IndexFunc(d.GetGroups(), (*pb.HashGroup).GetMajority)
	switch {
	case right < 0:
		return nil, "not healed: no majority, and the relay has no sim of this match to judge it"
	case slices.ContainsFunc(d.GetGroups()[right].GetPlayers(), func(p uint32) bool { return slices.Contains(failedBy, p) }):
		return nil, "not healed: the majority's simulation failed, and a failed sim's state is no heal target"
	case w.busy():
		return nil, busyNote
	}
	return func() { m.healFromPeer(d) }, ""
}

// busyNote is why a desync that comes while another is judged or healed is neither.
const busyNote = "not judged: the relay is judging or healing an earlier desync of this match; a split that lasts is judged at a later checkpoint"

// planJudgement plans the arbiter's judgement of desync d, taking a worker for it.
func (m *match) planJudgement(d *pb.Desync) (func(), string) {
	w := &m.desyncs
	// The shadow serves a desync after its state (an agreed checkpoint judged before a
	// desync at an earlier tick, whose last report came late, may have moved it past).
	fromShadow := m.shadow.on && (!m.shadow.has || m.shadow.tick < d.GetTick())
	switch {
	case w.arbitrations >= maxArbitrations:
		return nil, fmt.Sprintf("not judged: the arbiter judged its %d desyncs of this match, the most it judges; reported only, never healed toward a majority", maxArbitrations)
	case m.path == "" && !fromShadow:
		return nil, "not judged: the relay keeps no recording of this match to re-simulate; reported only"
	case w.busy():
		return nil, busyNote
	}
	select {
	case m.srv.arbiters <- struct{}{}:
	default:
		return nil, "not judged: every arbiter worker of the relay is busy; reported only (a split that lasts is judged at a later checkpoint)"
	}
	w.worker = true
	return func() { m.arbitrate(d, fromShadow) }, ""
}

// cancelPlan gives back the worker a plan took, when the plan will not run.
func (m *match) cancelPlan() {
	if m.desyncs.worker {
		m.desyncs.worker = false
		<-m.srv.arbiters
	}
}
