package lockstep

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

// Healing a peer from its History: a state the relay (or, unverified, a peer of the
// majority) sent, checked in a fresh sim against the promised hash before it touches the
// peer, then the frames since re-applied; or, for a sim that cannot restore, the state
// rebuilt from tick 0 on the frames kept. docs/forensics.md, "Healing".

// MaxHealState is the largest state a relay sends to heal a peer (pb.HealState.state),
// and the largest a peer accepts: 4 MiB.
const MaxHealState = 4 << 20

// Heal puts p (the peer this History follows) back in the right state after a desync
// (docs/forensics.md, "Healing"): state is the state after tick after, and want the hash
// it must have. It restores state into a fresh sim first and refuses it (ErrHealRefused)
// unless its hash is want, so a bad state never reaches p; then restores it into p's sim
// and re-applies the kept frames through the tick p had reached, and returns that tick
// (with an error wrapping ErrSimFailed if the sim failed doing it: p still reached it).
// The History then starts again from state: the snapshots it had were of the wrong game.
func (h *History) Heal(p *Peer, after uint64, state []byte, want uint64) (through uint64, err error) {
	next := p.Next()
	switch {
	case len(state) > MaxHealState:
		return 0, fmt.Errorf("%w: the state is %d bytes, more than %d", ErrHealRefused, len(state), MaxHealState)
	case after >= next:
		return 0, notApplied(after, next)
	case !h.keepsFramesAfter(after):
		return 0, fmt.Errorf("%w: the frames after tick %d are no longer kept here", ErrHealRefused, after)
	}
	fresh, err := h.newSim()
	if err != nil {
		return 0, err
	}
	defer sim.Close(fresh)
	check := NewPeer(fresh, PeerOptions{Every: p.Every()})
	if err := check.Restore(state, after); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrHealRefused, err)
	}
	got, err := sim.HashOf(fresh)
	if err != nil {
		return 0, fmt.Errorf("%w: hashing the state: %w", ErrHealRefused, err)
	}
	if got != want {
		return 0, &HealHashError{Got: got, Want: want}
	}
	if err := p.Restore(state, after); err != nil {
		return 0, err
	}
	// A sim that fails re-applying the frames fails as it would have the first time: the
	// peer still reaches the tick it had (a failed sim steps nothing), and the error says
	// so (ErrSimFailed).
	var failed error
	for {
		err := h.Replay(p, next-1, nil)
		if err == nil || !errors.Is(err, ErrSimFailed) {
			failed = cmp.Or(failed, err)
			break
		}
		failed = cmp.Or(failed, err)
		if p.Next() == next {
			break
		}
	}
	if failed != nil && !errors.Is(failed, ErrSimFailed) {
		return 0, failed
	}
	h.log.DropThrough(after)
	h.snaps = append(h.snaps[:0], historySnap{tick: after, state: slices.Clone(state)})
	h.from0 = false
	return next - 1, failed
}

// keepsFramesAfter reports whether every frame after tick after that the peer applied is
// kept.
func (h *History) keepsFramesAfter(after uint64) bool {
	return h.from0 || (len(h.snaps) > 0 && h.snaps[0].tick <= after)
}

// A peer's state sent to the relay to heal others (pb.Probe STEP_SNAPSHOT) comes in chunks
// of at most StateChunk bytes, so each fits the relay's 4 KiB client message limit, and is
// at most MaxPeerState bytes whole (32 chunks, well within a client's message burst). A
// larger state heals only from a relay that has the sim.
const (
	StateChunk   = 3 << 10
	MaxPeerState = 96 << 10
)

// HealFromStart is Heal for a sim that cannot restore a snapshot (or when none was sent):
// it rebuilds the state after tick after from the match's initial state on the kept
// frames — which a History keeps from tick 0 for such a sim up to MaxFramesFromStart —
// refuses it (ErrHealRefused, a *HealHashError for the hash) unless its hash is want, and
// steps it on to the tick p reached. It returns the rebuilt peer, to take p's place (p and
// its sim are left as they were: the caller closes them). It mends a one-off corruption.
func (h *History) HealFromStart(p *Peer, after uint64, want uint64) (*Peer, error) {
	next := p.Next()
	switch {
	case after >= next:
		return nil, notApplied(after, next)
	case !h.from0:
		return nil, fmt.Errorf("%w: the frames from tick 0 are no longer kept here (a sim without snapshots keeps %d MiB of them)", ErrHealRefused, MaxFramesFromStart>>20)
	}
	s, err := h.newSim()
	if err != nil {
		return nil, err
	}
	q := NewPeer(s, PeerOptions{Every: p.Every()})
	if err := h.Replay(q, after, nil); err != nil {
		sim.Close(s)
		return nil, err
	}
	got, err := sim.HashOf(s)
	switch {
	case err != nil:
		sim.Close(s)
		return nil, fmt.Errorf("%w: hashing the rebuilt state: %w", ErrHealRefused, err)
	case got != want:
		sim.Close(s)
		return nil, &HealHashError{Got: got, Want: want}
	}
	if err := h.Replay(q, next-1, nil); err != nil {
		sim.Close(s)
		return nil, err
	}
	return q, nil
}

// notApplied refuses a heal whose state is after a tick the peer has not applied yet
// (it applies next next).
func notApplied(after, next uint64) error {
	return fmt.Errorf("%w: a state after tick %d, but this peer applied only up to tick %d", ErrHealRefused, after, int64(next)-1)
}
