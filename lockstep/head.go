package lockstep

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/tickrelay/tickrelay/sim"
)

// Head is a player's predicted present (prediction and rollback, docs/prediction.md): a
// second sim that runs ahead of the confirmed one, on the player's own commands at the
// ticks the relay will seal them and the others' predicted, so that a player sees its
// own orders at once. When a sealed frame differs from what the head predicted for its
// tick, the head rolls back — restores the confirmed state — and re-simulates the ticks
// it had predicted, on the corrected inputs.
//
// The confirmed sim stays the one truth: checksums, desync evidence and the replay come
// from it only (the Peer that steps it is unchanged), so a prediction can never cause a
// desync. The head only reads the confirmed sim, to snapshot it when it rolls back.
//
// A Head is not safe for concurrent use.
type Head struct {
	peer      *Peer           // steps the head sim
	confirmed sim.Snapshotter // the confirmed sim, after confNext-1
	confNext  uint64
	me        uint32
	players   int
	window    uint64
	predict   Predictor
	inputs    [][]sim.Command // the head's inputs for ticks confNext.., as it applied them
	last      [][]sim.Command // per player (index player-1): its commands of its last sealed tick with any
	own       []OwnCommand    // this player's commands not sealed yet
	stats     HeadStats
}

// OwnCommand is one of the player's commands the relay has not sealed yet, at the tick it
// targets (or the tick the relay placed it at, once acknowledged).
type OwnCommand struct {
	Seq     uint32
	Tick    uint64
	Payload []byte
}

// Predictor says what player will send at tick, given its commands of the last sealed
// tick (none: it sent nothing then). It must be deterministic; its result is not kept
// past the tick's step.
type Predictor func(player uint32, tick uint64, last []sim.Command) []sim.Command

// PredictRepeat predicts that a player sends at every tick what it sent at the last
// sealed one, nothing included (GGPO's rule, for inputs held over ticks): the default.
func PredictRepeat(_ uint32, _ uint64, last []sim.Command) []sim.Command { return last }

// PredictNone predicts that a player sends nothing: for games whose commands are orders,
// each sent once.
func PredictNone(uint32, uint64, []sim.Command) []sim.Command { return nil }

// DefaultPredictWindow is how many ticks a head may run ahead of the confirmed state: 8.
const DefaultPredictWindow = 8

// HeadOptions configures a Head.
type HeadOptions struct {
	Me      uint32 // this player
	Players int
	// Window is how far past the last confirmed tick the head may run (DefaultPredictWindow
	// for 0). At the window the head waits for the confirmed stream.
	Window int
	// Predict predicts the other players' commands (PredictRepeat for nil).
	Predict Predictor
	// Every is the head peer's checksum cadence (reports are ignored): the confirmed one's.
	Every uint64
}

// HeadStats are a head's figures since it started.
type HeadStats struct {
	Rollbacks   int64 // how many times the head restored the confirmed state
	Resimulated int64 // ticks stepped again after a rollback
	Predicted   int64 // ticks the head stepped ahead of the confirmed state
	// Depths counts the rollbacks by depth: Depths[d] rollbacks re-simulated d ticks. A
	// count per depth, not a depth per rollback, so it stays as small as the window
	// however long the match. Snapshot and Restore are the time the snapshots of the
	// confirmed state and their restores into the head took, in all.
	Depths   []int64
	Snapshot time.Duration
	Restore  time.Duration
}

// DepthAt is the rollback depth at quantile q (0 to 1) of Depths, 0 without rollbacks.
func (s HeadStats) DepthAt(q float64) int { return depthAt(s.Depths, q) }

// depthAt is the depth at quantile q of a count per depth.
func depthAt(counts []int64, q float64) int {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := min(n-1, int64(q*float64(n)))
	for d, c := range counts {
		if rank < c {
			return d
		}
		rank -= c
	}
	return len(counts) - 1
}

// AddDepths adds the counts per depth of more rollbacks to counts.
func AddDepths(counts, more []int64) []int64 {
	for len(counts) < len(more) {
		counts = append(counts, 0)
	}
	for d, c := range more {
		counts[d] += c
	}
	return counts
}

// NewHead returns a head over headSim (a second instance of the match's sim, in the
// confirmed sim's state: both before tick 0, or both after tick next-1), following
// confirmed, which must be a sim.Snapshotter, as headSim.
func NewHead(headSim sim.Sim, confirmed sim.Sim, next uint64, opts HeadOptions) (*Head, error) {
	cs, ok := confirmed.(sim.Snapshotter)
	if _, ok2 := headSim.(sim.Snapshotter); !ok || !ok2 {
		return nil, fmt.Errorf("prediction needs a sim that snapshots (sim.Snapshotter, a module's tr_snapshot)")
	}
	if opts.Window <= 0 {
		opts.Window = DefaultPredictWindow
	}
	if opts.Predict == nil {
		opts.Predict = PredictRepeat
	}
	return &Head{
		peer: NewPeer(headSim, PeerOptions{Every: opts.Every, FirstTick: next}), confirmed: cs, confNext: next,
		me: opts.Me, players: opts.Players, window: uint64(opts.Window), predict: opts.Predict,
		last: make([][]sim.Command, opts.Players),
	}, nil
}

// Sim returns the head sim: render from it, between calls; never step it.
func (h *Head) Sim() sim.Sim { return h.peer.Sim() }

// Next returns the tick the head applies next: ticks before it are shown.
func (h *Head) Next() uint64 { return h.peer.Next() }

// Confirmed returns the tick the confirmed sim applies next: the head's ticks from it on
// are predicted.
func (h *Head) Confirmed() uint64 { return h.confNext }

// Stats returns the head's figures (Depths is the head's own slice, a few counts: copy
// what you keep).
func (h *Head) Stats() HeadStats { return h.stats }

// Own adds one of this player's commands, sent for tick target: the head shows it from
// that tick, rolling back if it already stepped past it. Call Advance to step to it.
func (h *Head) Own(seq uint32, target uint64, payload []byte) error {
	if target < h.confNext {
		return nil // sealed already without it: the relay places it later (Placed)
	}
	h.own = append(h.own, OwnCommand{Seq: seq, Tick: target, Payload: slices.Clone(payload)})
	if target < h.peer.Next() {
		return h.rollback()
	}
	return nil
}

// Placed moves an own command to the tick the relay acknowledged for it, or drops it
// (dropped: the relay rejected it), rolling back if the head had stepped with it wrong.
func (h *Head) Placed(seq uint32, tick uint64, dropped bool) error {
	i := slices.IndexFunc(h.own, func(c OwnCommand) bool { return c.Seq == seq })
	if i < 0 || (!dropped && h.own[i].Tick == tick) {
		return nil
	}
	old := h.own[i].Tick
	if dropped || tick < h.confNext {
		h.own = slices.Delete(h.own, i, i+1)
	} else {
		h.own[i].Tick = tick
	}
	if min(old, tick) < h.peer.Next() {
		return h.rollback()
	}
	return nil
}

// Sealed takes frame f, just applied to the confirmed sim (f.Tick is Confirmed()): if the
// head predicted its tick otherwise it rolls back. f is not kept.
func (h *Head) Sealed(f Frame) error {
	if f.Tick != h.confNext {
		return fmt.Errorf("lockstep: head: sealed frame for tick %d, expected %d", f.Tick, h.confNext)
	}
	// Own commands sealed now, or whose tick passed without them, are settled.
	h.own = slices.DeleteFunc(h.own, func(c OwnCommand) bool {
		return c.Tick <= f.Tick || slices.ContainsFunc(f.Commands, func(s sim.Command) bool { return s.Player == h.me && s.Seq == c.Seq })
	})
	for p := range h.last {
		h.last[p] = cloneCommands(h.last[p][:0], commandsOf(f.Commands, uint32(p+1)))
	}
	h.confNext = f.Tick + 1
	if h.peer.Next() <= f.Tick {
		// The head had not reached the tick (it waited at the window, or the player
		// predicts nothing): it takes the sealed frame as the confirmed sim did.
		_, _, err := h.peer.Apply(f)
		return err
	}
	predicted := h.inputs[0]
	h.inputs = h.inputs[1:]
	if h.sameCommands(predicted, f.Commands) {
		return nil
	}
	return h.rollback()
}

// Rebase restores the confirmed state into the head and steps it again to where it was:
// for when the confirmed sim's state changed other than by a sealed frame (a heal).
func (h *Head) Rebase() error { return h.rollback() }

// Advance steps the head, predicting, up to tick to — at most Window ticks past the
// confirmed state.
func (h *Head) Advance(to uint64) error {
	to = min(to, h.confNext+h.window-1)
	for h.peer.Next() <= to {
		t := h.peer.Next()
		in := h.inputsAt(t, nil)
		if _, _, err := h.peer.Apply(Frame{Tick: t, Commands: in}); err != nil {
			return err
		}
		h.inputs = append(h.inputs, in)
		h.stats.Predicted++
	}
	return nil
}

// rollback restores the confirmed state into the head and steps it again, on the inputs
// predicted now, to where it was.
func (h *Head) rollback() error {
	to := h.peer.Next()
	t0 := time.Now()
	state := h.confirmed.Snapshot()
	t1 := time.Now()
	if err := h.peer.restore(h.peer.s.(sim.Snapshotter), state, h.confNext); err != nil {
		return err
	}
	h.stats.Snapshot += t1.Sub(t0)
	h.stats.Restore += time.Since(t1)
	h.stats.Rollbacks++
	depth := int(to - h.confNext)
	for len(h.stats.Depths) <= depth { // grows only to the deepest yet: at most the window
		h.stats.Depths = append(h.stats.Depths, 0)
	}
	h.stats.Depths[depth]++
	h.stats.Resimulated += int64(depth)
	old := h.inputs
	h.inputs = h.inputs[:0:0]
	for t := h.confNext; t < to; t++ {
		var reuse []sim.Command
		if i := int(t - h.confNext); i < len(old) {
			reuse = old[i][:0]
		}
		in := h.inputsAt(t, reuse)
		if _, _, err := h.peer.Apply(Frame{Tick: t, Commands: in}); err != nil {
			return err
		}
		h.inputs = append(h.inputs, in)
	}
	return nil
}

// inputsAt is the head's frame for tick t: every player's commands in (player, seq)
// order, this player's own and the others' predicted, appended to dst.
func (h *Head) inputsAt(t uint64, dst []sim.Command) []sim.Command {
	for p := uint32(1); int(p) <= h.players; p++ {
		if p == h.me {
			for _, c := range h.own {
				if c.Tick == t {
					dst = append(dst, sim.Command{Player: p, Seq: c.Seq, Payload: c.Payload})
				}
			}
			continue
		}
		dst = append(dst, h.predict(p, t, h.last[p-1])...)
	}
	slices.SortStableFunc(dst, func(a, b sim.Command) int {
		if a.Player != b.Player {
			return int(a.Player) - int(b.Player)
		}
		return int(a.Seq) - int(b.Seq)
	})
	return dst
}

func commandsOf(cmds []sim.Command, player uint32) []sim.Command {
	i := slices.IndexFunc(cmds, func(c sim.Command) bool { return c.Player == player })
	if i < 0 {
		return nil
	}
	j := i
	for j < len(cmds) && cmds[j].Player == player {
		j++
	}
	return cmds[i:j]
}

func cloneCommands(dst, src []sim.Command) []sim.Command {
	for _, c := range src {
		dst = append(dst, sim.Command{Player: c.Player, Seq: c.Seq, Payload: slices.Clone(c.Payload)})
	}
	return dst
}

// sameCommands reports whether the head's inputs for a tick were the sealed ones: the
// same players and payloads in order, and for this player's own commands the same seqs.
// Another player's seq cannot be predicted: a sim whose state depends on the seqs of the
// commands it steps must not be predicted (docs/prediction.md).
func (h *Head) sameCommands(a, b []sim.Command) bool {
	return slices.EqualFunc(a, b, func(x, y sim.Command) bool {
		return x.Player == y.Player && (x.Player != h.me || x.Seq == y.Seq) && bytes.Equal(x.Payload, y.Payload)
	})
}
