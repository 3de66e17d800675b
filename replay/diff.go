package replay

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/sim"
)

// DefaultDiffLines bounds the state lines a diff reports.
const DefaultDiffLines = 20

// DiffReport says where two replays first disagree.
type DiffReport struct {
	// Same is true when the states agreed on every tick both files cover.
	Same bool
	// Compared is how many ticks were compared; TicksA and TicksB are the files' lengths.
	Compared, TicksA, TicksB uint64
	// Initial is true when the states differ before tick 0 (another seed or config).
	Initial bool
	// Tick is the first tick after which the states differ, with both hashes.
	Tick         uint64
	HashA, HashB uint64
	// InputsDiffer is true when the two files' frames of Tick differ: the divergence
	// comes from the commands, not from the simulation.
	InputsDiffer bool
	// Subsystems names the sub-hashes that differ, where the sim is a sim.SubHasher.
	Subsystems []string
	// Lines are the first differing lines of the two state dumps ("-" from A, "+" from
	// B), where the sim is a sim.Dumper; at most the limit given to Diff.
	Lines []string
}

// Diff re-simulates two replays of the same sim in lock step and reports the first tick
// whose state differs, and where the sim allows, which subsystems and dump lines differ.
// maxLines bounds the dump lines (0 means DefaultDiffLines). The dump comparison is line by
// line, so it is most useful for sims that dump entities in a stable order.
func Diff(a, b *Replay, maxLines int) (*DiffReport, error) {
	if maxLines <= 0 {
		maxLines = DefaultDiffLines
	}
	if a.Start.GetSimName() != b.Start.GetSimName() {
		return nil, &IdentityError{Field: "sim name", File: fmt.Sprintf("%q in A", a.Start.GetSimName()), Build: fmt.Sprintf("%q in B", b.Start.GetSimName())}
	}
	sa, err := a.NewSim()
	if err != nil {
		return nil, fmt.Errorf("A: %w", err)
	}
	sb, err := b.NewSim()
	if err != nil {
		return nil, fmt.Errorf("B: %w", err)
	}
	rep := &DiffReport{TicksA: a.Ticks, TicksB: b.Ticks}
	ha, hb, err := hashBoth(sa, sb)
	if err != nil {
		return nil, err
	}
	if ha != hb {
		rep.Initial = true
		rep.HashA, rep.HashB = ha, hb
		rep.Subsystems, rep.Lines = explain(sa, sb, maxLines)
		return rep, nil
	}
	pa := lockstep.NewPeer(sa, lockstep.PeerOptions{Every: uint64(a.Start.GetChecksumEvery())})
	pb := lockstep.NewPeer(sb, lockstep.PeerOptions{Every: uint64(b.Start.GetChecksumEvery())})
	n := min(a.Ticks, b.Ticks)
	ia, ib := 0, 0
	for t := uint64(0); t < n; t++ {
		fa, fb := nextFrame(a, &ia, t), nextFrame(b, &ib, t)
		if _, _, err := pa.Apply(fa); err != nil {
			return nil, fmt.Errorf("A: %w", err)
		}
		if _, _, err := pb.Apply(fb); err != nil {
			return nil, fmt.Errorf("B: %w", err)
		}
		rep.Compared++
		ha, hb, err := hashBoth(sa, sb)
		if err != nil {
			return nil, err
		}
		if ha != hb {
			rep.Tick, rep.HashA, rep.HashB = t, ha, hb
			rep.InputsDiffer = !sameFrame(fa, fb)
			rep.Subsystems, rep.Lines = explain(sa, sb, maxLines)
			return rep, nil
		}
	}
	rep.Same = true
	return rep, nil
}

func nextFrame(rp *Replay, i *int, t uint64) lockstep.Frame {
	if *i < len(rp.Frames) && rp.Frames[*i].Tick == t {
		*i++
		return rp.Frames[*i-1]
	}
	return lockstep.Frame{Tick: t}
}

func sameFrame(a, b lockstep.Frame) bool {
	return slices.EqualFunc(a.Commands, b.Commands, func(x, y sim.Command) bool {
		return x.Player == y.Player && x.Seq == y.Seq && bytes.Equal(x.Payload, y.Payload)
	})
}

// explain names the differing subsystems and dump lines of two states.
func explain(a, b sim.Sim, maxLines int) (subsystems, lines []string) {
	if ha, ok := a.(sim.SubHasher); ok {
		if hb, ok := b.(sim.SubHasher); ok {
			xa, xb := ha.SubHashes(), hb.SubHashes()
			for i := range min(len(xa), len(xb)) {
				if xa[i] != xb[i] {
					subsystems = append(subsystems, xa[i].Name)
				}
			}
		}
	}
	da, ok := a.(sim.Dumper)
	if !ok {
		return subsystems, nil
	}
	db, ok := b.(sim.Dumper)
	if !ok {
		return subsystems, nil
	}
	var ba, bb bytes.Buffer
	if da.Dump(&ba) != nil || db.Dump(&bb) != nil {
		return subsystems, nil
	}
	la, lb := strings.Split(ba.String(), "\n"), strings.Split(bb.String(), "\n")
	for i := 0; i < max(len(la), len(lb)) && len(lines) < maxLines; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			if x != "" {
				lines = append(lines, "- "+x)
			}
			if y != "" {
				lines = append(lines, "+ "+y)
			}
		}
	}
	if len(lines) > maxLines {
		lines = lines[:maxLines]
	}
	return subsystems, lines
}

// hashBoth hashes A's and B's sims; one that failed is an error, never a difference.
func hashBoth(sa, sb sim.Sim) (uint64, uint64, error) {
	ha, err := sim.HashOf(sa)
	if err != nil {
		return 0, 0, fmt.Errorf("A: %w: %w", lockstep.ErrSimFailed, err)
	}
	hb, err := sim.HashOf(sb)
	if err != nil {
		return 0, 0, fmt.Errorf("B: %w: %w", lockstep.ErrSimFailed, err)
	}
	return ha, hb, nil
}
