package desync

import (
	"fmt"
	"slices"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// plan decides what follows desync d beyond its record and its forensics: the step to
// take once d is recorded (judge it, or heal it from a peer), or nil and, when the relay
// would have acted but will not, why (the Desync's note). failedBy are the players who
// said their sim failed by d's tick. A plan to judge holds one of the relay's workers
// until it runs or is cancelled (cancelPlan).
func (w *Work) plan(d *pb.Desync, failedBy []uint32) (func(), string) {
	switch {
	case !w.host.Running(), w.mended(d):
		return nil, "" // ending; or the healed players' reports from before their heal
	case w.canJudge():
		return w.planJudgement(d)
	case !w.cfg.Policy.Heals():
		return nil, ""
	case !w.cfg.PeerHeals:
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
	return func() { w.healFromPeer(d) }, ""
}

// busyNote is why a desync that comes while another is judged or healed is neither.
const busyNote = "not judged: the relay is judging or healing an earlier desync of this match; a split that lasts is judged at a later checkpoint"

// planJudgement plans the arbiter's judgement of desync d, taking a worker for it.
func (w *Work) planJudgement(d *pb.Desync) (func(), string) {
	// The shadow serves a desync after its state (an agreed checkpoint judged before a
	// desync at an earlier tick, whose last report came late, may have moved it past).
	fromShadow := w.shadow.on && (!w.shadow.has || w.shadow.tick < d.GetTick())
	switch {
	case w.arbitrations >= maxArbitrations:
		return nil, fmt.Sprintf("not judged: the arbiter judged its %d desyncs of this match, the most it judges; reported only, never healed toward a majority", maxArbitrations)
	case w.cfg.Recording == "" && !fromShadow:
		return nil, "not judged: the relay keeps no recording of this match to re-simulate; reported only"
	case w.busy():
		return nil, busyNote
	case !w.tryWorker():
		return nil, "not judged: every arbiter worker of the relay is busy; reported only (a split that lasts is judged at a later checkpoint)"
	}
	w.worker = true
	return func() { w.arbitrate(d, fromShadow) }, ""
}

// cancelPlan gives back the worker a plan took, when the plan will not run.
func (w *Work) cancelPlan() {
	if w.worker {
		w.worker = false
		<-w.cfg.Workers
	}
}
