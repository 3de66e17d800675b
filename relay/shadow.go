package relay

import (
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// The shadow (issue 33): for a match the relay can judge (it has the match's sim, and
// the arbiter is on), the relay keeps its own state of the match after a recent agreed
// checkpoint, so that judging a desync re-simulates only the ticks since — not the whole
// match from tick 0, which takes seconds for a module two hours in. The actor keeps the
// frames sealed since that state (a lockstep.FrameLog: copies in reused arenas, no
// allocation per tick); a worker of the arbiters' pool advances the state to the latest
// agreed checkpoint once Options.ShadowEvery has passed since it, checks that its hash is the
// players' agreed hash, and hands back its snapshot. Off the actor, as every sim call.
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

// shadowed is a worker's advance of a shadow, back at the actor.
type shadowed struct {
	tick  uint64
	state []byte
	note  string // why the shadow stops, if it does
}

// startShadow turns the shadow on for a match that starts at tick 0, if the relay can
// judge it.
func (m *match) startShadow() {
	m.shadow = shadow{on: m.canJudge()}
}

// canJudge reports whether the relay can re-simulate this match: it has the sim the
// match names, and the arbiter is on.
func (m *match) canJudge() bool {
	return !m.srv.opts.NoArbiter && slices.Contains(sim.Registered(), sim.Info{Name: m.create.Sim, Version: m.create.SimVersion})
}

// newSim builds the match's sim as its Start record describes it.
func (m *match) newSim() (sim.Sim, error) {
	return sim.New(m.create.Sim, m.create.SimVersion, m.create.simConfig())
}

// shadowAgreed advances the shadow to agreed checkpoint tick (with hash), if it is
// Options.ShadowEvery past its state and a worker is free (else a later checkpoint will).
func (m *match) shadowAgreed(tick, hash uint64) {
	sh := &m.shadow
	base := uint64(0)
	if sh.has {
		base = sh.tick + 1
	}
	every := max(1, uint64(m.srv.opts.ShadowEvery.Seconds()*float64(m.opts.TickRate)))
	if !sh.on || sh.busy || tick+1 < base+every {
		return
	}
	select {
	case m.srv.arbiters <- struct{}{}:
	default:
		return
	}
	sh.busy = true
	from := m.fromShadow(tick)
	m.srv.matchWG.Add(1)
	go func() {
		defer m.srv.matchWG.Done()
		defer func() { <-m.srv.arbiters }()
		m.post(event{kind: evResult, data: advance(from, tick, hash)})
	}()
}

// advance re-simulates the shadow to agreed checkpoint tick and takes its state, or says
// why the shadow stops: the sim failed, hashes otherwise than the players agreed (another
// build), or cannot snapshot.
func advance(from resim, tick, hash uint64) *shadowed {
	r := &shadowed{tick: tick}
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

// shadowPeerFrom returns a function, for a worker, that builds a Peer in the shadow's
// state as it is now.
func (m *match) shadowPeerFrom() func() (*lockstep.Peer, error) {
	has, tick, state, every := m.shadow.has, m.shadow.tick, m.shadow.state, uint64(m.opts.ChecksumEvery)
	return func() (*lockstep.Peer, error) {
		s, err := m.newSim()
		if err != nil {
			return nil, err
		}
		p := lockstep.NewPeer(s, lockstep.PeerOptions{Every: every})
		if has {
			if err := p.Restore(state, tick); err != nil {
				sim.Close(s)
				return nil, err
			}
		}
		return p, nil
	}
}

// shadowDone takes a worker's advance of the shadow.
func (m *match) shadowDone(r *shadowed) {
	sh := &m.shadow
	sh.busy = false
	if !sh.on {
		return
	}
	if r.note != "" {
		m.log.Warn("the relay's shadow of the match stops: desyncs are judged from the recording", zap.String("why", r.note))
		m.shadow = shadow{} // off
		return
	}
	sh.has, sh.tick, sh.state = true, r.tick, r.state
	sh.log.DropThrough(r.tick)
}

// shadowFrame keeps a sealed frame for the shadow.
func (m *match) shadowFrame(f lockstep.Frame) {
	if m.shadow.on {
		m.shadow.log.Add(f)
	}
}
