package replay

import (
	"sort"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// DefaultSnapshotEvery is the tick spacing of a Seeker's in-memory snapshots: 600 ticks
// (20 s at 30 Hz).
const DefaultSnapshotEvery = 600

// Seeker moves a simulation to any tick of a replay. Moving forward steps the frames;
// moving back restores the nearest earlier snapshot when the sim implements
// sim.Snapshotter (snapshots are taken in memory every SnapshotEvery ticks as the seeker
// passes them), and otherwise re-simulates from tick 0. Either way the state at a tick is
// the same: snapshots only save time.
type Seeker struct {
	rp    *Replay
	s     sim.Sim
	peer  *lockstep.Peer
	every uint64
	fi    int
	snaps []snapshot // ascending by tick
}

type snapshot struct {
	next uint64 // ticks < next were applied
	data []byte
}

// NewSeeker starts a seeker before tick 0. snapshotEvery 0 means DefaultSnapshotEvery.
func NewSeeker(rp *Replay, snapshotEvery uint64) (*Seeker, error) {
	if snapshotEvery == 0 {
		snapshotEvery = DefaultSnapshotEvery
	}
	k := &Seeker{rp: rp, every: snapshotEvery}
	if err := k.reset(); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *Seeker) reset() error {
	s, err := k.rp.NewSim()
	if err != nil {
		return err
	}
	k.s, k.fi = s, 0
	k.peer = lockstep.NewPeer(s, lockstep.PeerOptions{Every: uint64(k.rp.Start.GetChecksumEvery())})
	return nil
}

// Sim returns the simulation (read it; step it only through the Seeker).
func (k *Seeker) Sim() sim.Sim { return k.s }

// Next returns the next tick Step applies; ticks before it are applied.
func (k *Seeker) Next() uint64 { return k.peer.Next() }

// Done reports whether every tick of the replay is applied.
func (k *Seeker) Done() bool { return k.peer.Next() >= k.rp.Ticks }

// Step applies the next tick and returns its frame.
func (k *Seeker) Step() (lockstep.Frame, error) {
	t := k.peer.Next()
	f := lockstep.Frame{Tick: t}
	if k.fi < len(k.rp.Frames) && k.rp.Frames[k.fi].Tick == t {
		f = k.rp.Frames[k.fi]
		k.fi++
	}
	if _, _, err := k.peer.Apply(f); err != nil {
		return f, err
	}
	if snap, ok := k.s.(sim.Snapshotter); ok && (t+1)%k.every == 0 {
		if n := len(k.snaps); n == 0 || k.snaps[n-1].next < t+1 {
			k.snaps = append(k.snaps, snapshot{next: t + 1, data: snap.Snapshot()})
		}
	}
	return f, nil
}

// Seek moves so that ticks before next are applied and Step applies tick next. next is
// clamped to the replay's length.
func (k *Seeker) Seek(next uint64) error {
	if next > k.rp.Ticks {
		next = k.rp.Ticks
	}
	if next < k.peer.Next() {
		if err := k.rewind(next); err != nil {
			return err
		}
	}
	for k.peer.Next() < next {
		if _, err := k.Step(); err != nil {
			return err
		}
	}
	return nil
}

func (k *Seeker) rewind(next uint64) error {
	i := sort.Search(len(k.snaps), func(i int) bool { return k.snaps[i].next > next }) - 1
	if i >= 0 {
		if snap, ok := k.s.(sim.Snapshotter); ok {
			at := k.snaps[i]
			if err := snap.Restore(at.data); err == nil {
				k.peer = lockstep.NewPeer(k.s, lockstep.PeerOptions{Every: uint64(k.rp.Start.GetChecksumEvery()), FirstTick: at.next})
				k.fi = sort.Search(len(k.rp.Frames), func(j int) bool { return k.rp.Frames[j].Tick >= at.next })
				return nil
			}
		}
	}
	return k.reset()
}
