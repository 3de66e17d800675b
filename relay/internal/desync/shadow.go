package desync

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// The shadow: for a match the relay can judge (it has the match's sim, and the arbiter is
// on), the relay keeps its own state of the match after a recent agreed checkpoint, so
// that judging a desync re-simulates only the ticks since — not the whole match from tick
// 0, which takes seconds for a module two hours in. The work keeps the frames sealed since
// that state (a lockstep.FrameLog: copies in reused arenas, no allocation per tick); a
// worker advances the state to the latest agreed checkpoint once Config.ShadowEvery ticks
// have passed since it, checks that its hash is the players' agreed hash, and hands back
// its snapshot. Off the actor, as every sim call.
//
// A shadow stops (and judging falls back to the replay file, from tick 0) when the sim
// cannot snapshot, or its hash disagrees with an agreed checkpoint: the relay's build is
// not the players', and a state of its own would mislead.

// shadow is a match's shadow: the state after tick (when has; the initial state when
// not), the frames sealed after it, and whether a worker is advancing it.
type shadow struct {
	on    bool
	has   bool
	tick  uint64
	state []byte
	log   lockstep.FrameLog
	busy  bool
}

// advanced is a worker's advance of a shadow, back at the actor.
type advanced struct {
	tick  uint64
	state []byte
	note  string // why the shadow stops, if it does
}

// shadowAgreed advances the shadow to agreed checkpoint tick (with hash), if it is
// Config.ShadowEvery past its state and a worker is free (else a later checkpoint will).
func (w *Work) shadowAgreed(tick, hash uint64) {
	sh := &w.shadow
	base := uint64(0)
	if sh.has {
		base = sh.tick + 1
	}
	if !sh.on || sh.busy || tick+1 < base+max(1, w.cfg.ShadowEvery) || !w.tryWorker() {
		return
	}
	sh.busy = true
	from := w.fromShadow(tick)
	w.launch(func() any { return advance(from, tick, hash) })
}

// advance re-simulates the shadow to agreed checkpoint tick and takes its state, or says
// why the shadow stops: the sim failed, hashes otherwise than the players agreed (another
// build), or cannot snapshot.
func advance(from resim, tick, hash uint64) *advanced {
	r := &advanced{tick: tick}
	s, _, err := from()
	if err != nil {
		r.note = err.Error()
		return r
	}
	defer sim.Close(s)
	sn, ok := s.(sim.Snapshotter)
	switch h := s.Hash(); {
	case h != hash:
		r.note = fmt.Sprintf("the relay's sim hashes %016x after agreed checkpoint %d, the players %016x: it is another build", h, tick, hash)
	case !ok:
		r.note = "the sim cannot take a snapshot"
	default:
		r.state = sn.Snapshot()
	}
	return r
}

// fromShadow re-simulates from the shadow's state (the state after a recent agreed
// checkpoint) on the frames sealed since.
func (w *Work) fromShadow(tick uint64) resim {
	sh := &w.shadow
	has, at, state, every, newSim := sh.has, sh.tick, sh.state, uint64(w.cfg.ChecksumEvery), w.cfg.NewSim
	frames := sh.log.Clone(tick)
	return func() (sim.Sim, uint64, error) {
		s, err := newSim()
		if err != nil {
			return nil, 0, fmt.Errorf("building the match's sim: %w", err)
		}
		p := lockstep.NewPeer(s, lockstep.PeerOptions{Every: every})
		if has {
			if err := p.Restore(state, at); err != nil {
				sim.Close(s)
				return nil, 0, fmt.Errorf("building the match's sim: %w", err)
			}
		}
		first := p.Next()
		if err := frames.Replay(p, tick, nil); err != nil {
			sim.Close(p.Sim())
			return nil, 0, fmt.Errorf("re-simulating through tick %d: %w", tick, err)
		}
		return p.Sim(), tick + 1 - first, nil
	}
}

// shadowDone takes a worker's advance of the shadow.
func (w *Work) shadowDone(r *advanced) {
	sh := &w.shadow
	sh.busy = false
	if !sh.on {
		return
	}
	if r.note != "" {
		w.log.Warn("the relay's shadow of the match stops: desyncs are judged from the recording", zap.String("why", r.note))
		w.shadow = shadow{} // off
		return
	}
	sh.has, sh.tick, sh.state = true, r.tick, r.state
	sh.log.DropThrough(r.tick)
}

// ShadowFrames is the log of the frames the shadow keeps since its state, nil when the
// shadow is off: the relay's hot-path test holds it to show a warm seal allocates nothing.
func (w *Work) ShadowFrames() *lockstep.FrameLog {
	if !w.shadow.on {
		return nil
	}
	return &w.shadow.log
}
