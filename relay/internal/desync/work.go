package desync

import (
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
)

// Host is what the match's actor lends the desync work. Every call is made on the actor.
type Host interface {
	// Live reports whether player slot (from 1) is connected.
	Live(slot uint32) bool
	// Send sends msg to player slot only: a question or a state for that player, not
	// part of the stream.
	Send(slot uint32, msg *pb.ServerMessage)
	// Record records msg in the match's stream and sends it to every player (record
	// before broadcast); false when the match can record nothing more (it is ending).
	Record(msg *pb.ServerMessage) bool
	// FlushIdle writes the pending run of empty ticks, so that the recording covers every
	// sealed tick; an error ends the match.
	FlushIdle() error
	// NextTick is the next tick the match seals.
	NextTick() uint64
	// Running reports whether the match is running, not ending or ended.
	Running() bool
	// Go runs job off the actor on a worker of the relay's pool (Config.Workers, one of
	// whose places the caller took) and hands its result to the actor's Work.Done.
	Go(job func() any)
}

// Config is what the work needs to know of the match.
type Config struct {
	// Players is the number of slots.
	Players int
	// TickRate is the match's clock, in ticks a second; ChecksumEvery its checkpoints'
	// cadence.
	TickRate, ChecksumEvery int
	// Policy is what a desync does.
	Policy Policy
	// PeerHeals lets a relay without the sim heal toward a majority's state (unverified).
	PeerHeals bool
	// NewSim builds the match's sim as its Start record describes it; nil when the relay
	// cannot re-simulate the match (no sim of its name and version, or the arbiter off).
	NewSim func() (sim.Sim, error)
	// Recording is the match's replay file, or "" when it is not recorded.
	Recording string
	// Shadow keeps the relay's own state of the match after a recent agreed checkpoint,
	// advanced once ShadowEvery ticks have passed: for a match judged from its start
	// (NewSim set); off for a match resumed mid-way.
	Shadow      bool
	ShadowEvery uint64
	// Workers bounds the jobs the relay runs at once: a place is taken before Host.Go.
	Workers chan struct{}
	// Log is the match's logger.
	Log *zap.Logger
}

// Work is a match's state for what follows its desyncs: the last checkpoint the players
// agreed on, the inquiry and the heal under way, the arbiter's and the shadow's.
type Work struct {
	host Host
	cfg  Config
	log  *zap.Logger

	agreed, inquiredAgreed uint64 // the last agreed checkpoint; the one before the last inquired desync
	hasAgreed              bool
	inquiry                *forensics
	reports, arbitrations  int
	probeID                uint32 // the last Probe or HealState id
	arbitrating            bool
	worker                 bool // a plan holds a worker for its judgement
	healing                *healing
	heals                  []int    // by slot: the heals each player had
	healedBefore           []uint64 // by slot: the tick from which its reports are of the right game again (0: not healed)
	shadow                 shadow
}

// New returns the desync work of a match.
func New(h Host, cfg Config) *Work {
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	w := &Work{host: h, cfg: cfg, log: log, heals: make([]int, cfg.Players), healedBefore: make([]uint64, cfg.Players)}
	w.shadow.on = cfg.Shadow && w.canJudge()
	return w
}

// canJudge reports whether the relay can re-simulate the match.
func (w *Work) canJudge() bool { return w.cfg.NewSim != nil }

// Agreed takes an agreed checkpoint: forensics start from it, and the shadow advances to it.
func (w *Work) Agreed(tick, hash uint64) {
	w.agreed, w.hasAgreed = tick, true
	w.shadowAgreed(tick, hash)
}

// Desync records desync d (with a note when the relay will neither judge nor heal it)
// and starts what follows it: forensics, and the judgement or the heal its plan chose.
// failedBy are the players who said their sim failed by d's tick. It reports whether d
// was recorded (false: the match is ending).
func (w *Work) Desync(d *pb.Desync, failedBy []uint32) bool {
	var next func()
	if w.cfg.Policy != End {
		next, d.Note = w.plan(d, failedBy)
	}
	if !w.host.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: d}}) {
		w.cancelPlan()
		return false
	}
	if w.cfg.Policy == End {
		return true
	}
	w.investigate(d)
	if next != nil {
		next()
	}
	return true
}

// Sealed takes a sealed frame: the shadow keeps it, and a step waiting past its deadline
// goes on without what it waits for.
func (w *Work) Sealed(f lockstep.Frame) {
	if w.shadow.on {
		w.shadow.log.Add(f)
	}
	if in := w.inquiry; in != nil && f.Tick >= in.deadline {
		w.nextStep()
	}
	w.healTick(f.Tick)
}

// Done takes a job's result back on the actor.
func (w *Work) Done(result any) {
	switch r := result.(type) {
	case *judgement:
		w.arbitrated(r)
	case *advanced:
		w.shadowDone(r)
	}
}

// End records, as the match ends, what the inquiry and the heal under way found so far.
func (w *Work) End() {
	if w.inquiry != nil {
		w.closeInquiry("the match ended before the inquiry did")
	}
	if w.healing != nil {
		w.healDone("the match ended before every player answered")
	}
}

// launch runs job on a worker whose place the caller took, off the actor.
func (w *Work) launch(job func() any) {
	w.host.Go(func() any {
		defer func() { <-w.cfg.Workers }()
		return job()
	})
}

// tryWorker takes a place in the relay's pool of workers, if one is free.
func (w *Work) tryWorker() bool {
	select {
	case w.cfg.Workers <- struct{}{}:
		return true
	default:
		return false
	}
}

// ticksFromNow is the tick seconds of the match's clock from now.
func (w *Work) ticksFromNow(seconds uint64) uint64 {
	return w.host.NextTick() + seconds*uint64(w.cfg.TickRate)
}

// live reports whether slot is a slot of the match and connected.
func (w *Work) live(slot uint32) bool {
	return slot >= 1 && int(slot) <= w.cfg.Players && w.host.Live(slot)
}

// busy reports whether a desync is being judged or healed now.
func (w *Work) busy() bool { return w.arbitrating || w.healing != nil }

// mended reports whether desync d is only the split a heal mended: once the reports that
// healed players made before their heal are set aside, the others agree. Each healed
// player's mark covers its own reports only, so no answer of one player can keep a
// desync of the others from being judged.
func (w *Work) mended(d *pb.Desync) bool {
	stale, fresh := false, 0
	for _, g := range d.GetGroups() {
		current := false
		for _, p := range g.GetPlayers() {
			if i := int(p) - 1; i >= 0 && i < len(w.healedBefore) && d.GetTick() < w.healedBefore[i] {
				stale = true
			} else {
				current = true
			}
		}
		if current {
			fresh++
		}
	}
	return stale && fresh <= 1
}
