package lockstep

import (
	"fmt"
	"hash/fnv"

	"github.com/tickrelay/tickrelay/sim"
)

// History keeps what a peer needs to describe, after the fact, the state after any recent
// tick — to answer the relay's desync forensics (docs/forensics.md): the state after each
// of the last few checkpoints (a sim.Snapshotter's snapshot) and every frame since the
// oldest of them. A sim that cannot snapshot is rebuilt from its initial state on every
// frame from tick 0: for forensics up to MaxHistoryTicks, to heal while the frames fit in
// MaxFramesFromStart.
//
// A snapshot is taken at every SnapshotEvery-th checkpoint (its cost, on the normal path,
// is most of what answering costs: 2.7-3.7 % of skirmish's step time at every checkpoint),
// and a state between two snapshots is rebuilt from the one before it.
//
// A History is not safe for concurrent use.
type History struct {
	newSim func() (sim.Sim, error)
	keep   int
	seen   int           // checkpoints seen
	snaps  []historySnap // oldest first
	from0  bool          // every frame from tick 0 is kept: the initial state can be rebuilt
	noSnap bool          // the sim is not a sim.Snapshotter
	// The non-empty frames of ticks after the oldest snapshot's (or from 0).
	log FrameLog
}

type historySnap struct {
	tick  uint64 // the state after this tick
	state []byte
}

// DefaultHistoryKeep is how many snapshots a History keeps: 4, taken every
// SnapshotEvery-th checkpoint, about 8 seconds of a 30 Hz match checksummed every 30 ticks.
const DefaultHistoryKeep = 4

// SnapshotEvery is how many checkpoints apart a History snapshots the sim: 2.
const SnapshotEvery = 2

// MaxHistoryTicks is how far a History of a sim without snapshots answers desync forensics
// (Rebuild): each answer re-simulates from tick 0 on the peer's own loop, so it must stay
// short (1,024 ticks: 34 s of a 30 Hz match). Past it the peer says the state is not kept.
const MaxHistoryTicks = 1024

// MaxFramesFromStart is how much of the frames from tick 0 (FrameLog.Bytes) a History
// keeps for a sim without snapshots, to heal it by rebuilding (HealFromStart): 16 MiB, a
// 2-hour 30 Hz match of 4 players each sending 3 commands of 40 bytes a second with room
// to spare. A heal is a one-off, so re-simulating the whole match for it is affordable
// (skirmish: 0.4-0.6 s natively for 2 hours). Past the bound a heal is refused.
const MaxFramesFromStart = 16 << 20

// NewHistory returns a History whose sims are built by newSim (in the match's initial
// state) and which keeps the state of the last keep checkpoints (DefaultHistoryKeep for
// keep <= 0).
func NewHistory(newSim func() (sim.Sim, error), keep int) *History {
	if keep <= 0 {
		keep = DefaultHistoryKeep
	}
	return &History{newSim: newSim, keep: keep, from0: true}
}

// Frame keeps f (a copy): call it with every frame the peer applies, in order. Empty
// frames need no call.
func (h *History) Frame(f Frame) {
	if len(f.Commands) == 0 || (!h.from0 && len(h.snaps) == 0) {
		return
	}
	if h.from0 && len(h.snaps) == 0 && h.log.Bytes()+frameBytes(f) > MaxFramesFromStart {
		h.from0 = false // a sim without snapshots: too much since tick 0 now
		h.log.Reset()
		return
	}
	h.log.Add(f)
}

// Checkpoint keeps the state of s after checkpoint tick t, at every SnapshotEvery-th, if
// s is a sim.Snapshotter, and forgets what only the snapshots before the last keep needed.
func (h *History) Checkpoint(t uint64, s sim.Sim) {
	sn, ok := s.(sim.Snapshotter)
	if !ok {
		h.noSnap = true
		return
	}
	if h.seen++; h.seen%SnapshotEvery != 0 {
		return
	}
	h.snaps = append(h.snaps, historySnap{tick: t, state: sn.Snapshot()})
	if len(h.snaps) <= h.keep {
		return
	}
	h.snaps = h.snaps[1:]
	h.from0 = false
	h.log.DropThrough(h.snaps[0].tick)
}

// Rebuild returns a Peer (checksum cadence every) whose sim is in the state after tick
// after (before tick 0 when hasAfter is false): restored from the last kept snapshot at or
// before it, or built in the initial state while every frame is kept, then stepped on the
// kept frames. Step it on with Replay.
func (h *History) Rebuild(after uint64, hasAfter bool, every uint64) (*Peer, error) {
	base := -1 // the snapshot to start from
	for i, sn := range h.snaps {
		if hasAfter && sn.tick <= after {
			base = i
		}
	}
	var p *Peer
	switch {
	case base >= 0:
		s, err := h.newSim()
		if err != nil {
			return nil, err
		}
		sn := h.snaps[base]
		if err := s.(sim.Snapshotter).Restore(sn.state); err != nil {
			return nil, fmt.Errorf("restoring the kept snapshot of tick %d: %w", sn.tick, err)
		}
		p = NewPeer(s, PeerOptions{Every: every, FirstTick: sn.tick + 1})
	case h.from0 && (!hasAfter || after < MaxHistoryTicks || !h.noSnap):
		s, err := h.newSim()
		if err != nil {
			return nil, err
		}
		p = NewPeer(s, PeerOptions{Every: every})
	case !hasAfter:
		return nil, fmt.Errorf("the frames from tick 0 are no longer kept")
	case h.noSnap:
		return nil, fmt.Errorf("the sim cannot snapshot, and the state after tick %d is past tick %d, as far as forensics re-simulate from tick 0", after, MaxHistoryTicks)
	default:
		return nil, fmt.Errorf("the state after tick %d is not kept (the oldest kept is after tick %d)", after, h.snaps[0].tick)
	}
	if hasAfter {
		if err := h.Replay(p, after, nil); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Replay applies the kept frames to p through tick to, calling visit (if not nil) after
// each tick.
func (h *History) Replay(p *Peer, to uint64, visit func(tick uint64)) error {
	return h.log.Replay(p, to, visit)
}

// The bounds of a peer's answer to one step of desync forensics (pb.Evidence): a peer
// sends no more, a relay takes no more. Each step's answer fits the relay's 4 KiB
// client message limit.
const (
	MaxEvidenceHashes     = 256 // hashes after each tick between two checkpoints
	MaxEvidenceSubHashes  = 64  // sub-hashes, each name at most MaxEvidenceName bytes
	MaxEvidenceName       = 32
	MaxEvidenceLineHashes = 512 // dump line hashes: the first lines of a longer dump
	MaxEvidenceLines      = 8   // dump lines, each at most MaxEvidenceLineBytes
	MaxEvidenceLineBytes  = 200
	MaxEvidenceMissing    = 200 // what the peer could not answer, and why
)

// LineHash is the digest of one line of a sim's dump that desync forensics compare: FNV-1a
// 32 of its bytes, without the newline.
func LineHash(line string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(line))
	return h.Sum32()
}
