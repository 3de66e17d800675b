package lockstep

import (
	"cmp"
	"slices"

	"github.com/tickrelay/tickrelay/sim"
)

// FrameLog keeps copies of the non-empty frames of a run of ticks, in three arenas that
// are reused as old frames are dropped: no allocation per frame once they have grown. A
// frame's commands end at its end in cmds (they start where the previous frame's end), a
// command's payload at its end in payloads. Empty ticks are not kept: Replay steps them.
//
// A FrameLog is not safe for concurrent use; Clone gives another goroutine its own.
type FrameLog struct {
	frames   []logFrame
	cmds     []logCmd
	payloads []byte
	scratch  []sim.Command // the frame Replay applies, rebuilt each tick
}

type logFrame struct {
	tick uint64
	end  int // in cmds
}

type logCmd struct {
	player, seq uint32
	end         int // in payloads
}

// Add keeps a copy of f, a frame after every frame kept. An empty frame needs no call.
func (l *FrameLog) Add(f Frame) {
	if len(f.Commands) == 0 {
		return
	}
	for _, c := range f.Commands {
		l.payloads = append(l.payloads, c.Payload...)
		l.cmds = append(l.cmds, logCmd{player: c.Player, seq: c.Seq, end: len(l.payloads)})
	}
	l.frames = append(l.frames, logFrame{tick: f.Tick, end: len(l.cmds)})
}

// Len returns how many frames are kept.
func (l *FrameLog) Len() int { return len(l.frames) }

// What a frame and a command take in the arenas besides the payloads (logFrame, logCmd).
const frameCost, cmdCost = 16, 16

// Bytes returns the memory the kept frames take in the arenas (frameCost a frame,
// cmdCost a command, and the payloads).
func (l *FrameLog) Bytes() int {
	return frameCost*len(l.frames) + cmdCost*len(l.cmds) + len(l.payloads)
}

// frameBytes is what f takes in a FrameLog's arenas (as Bytes counts).
func frameBytes(f Frame) int {
	n := frameCost + cmdCost*len(f.Commands)
	for _, c := range f.Commands {
		n += len(c.Payload)
	}
	return n
}

// DropThrough forgets the frames of ticks up to tick, moving the others to the arenas'
// fronts.
func (l *FrameLog) DropThrough(tick uint64) {
	n := 0
	for n < len(l.frames) && l.frames[n].tick <= tick {
		n++
	}
	if n == 0 {
		return
	}
	cut := l.frames[n-1].end
	bcut := 0
	if cut > 0 {
		bcut = l.cmds[cut-1].end
	}
	l.frames = l.frames[:copy(l.frames, l.frames[n:])]
	for i := range l.frames {
		l.frames[i].end -= cut
	}
	l.cmds = l.cmds[:copy(l.cmds, l.cmds[cut:])]
	for i := range l.cmds {
		l.cmds[i].end -= bcut
	}
	l.payloads = l.payloads[:copy(l.payloads, l.payloads[bcut:])]
}

// Reset forgets every frame.
func (l *FrameLog) Reset() {
	l.frames, l.cmds, l.payloads = l.frames[:0], l.cmds[:0], l.payloads[:0]
}

// Clone returns a copy of the frames of ticks up to through, for another goroutine.
func (l *FrameLog) Clone(through uint64) *FrameLog {
	n := 0
	for n < len(l.frames) && l.frames[n].tick <= through {
		n++
	}
	c := &FrameLog{frames: slices.Clone(l.frames[:n])}
	if n > 0 {
		c.cmds = slices.Clone(l.cmds[:l.frames[n-1].end])
		if k := len(c.cmds); k > 0 {
			c.payloads = slices.Clone(l.payloads[:c.cmds[k-1].end])
		}
	}
	return c
}

// frame is kept frame i as a Frame whose slices are the log's, valid until the next call.
func (l *FrameLog) frame(i int) Frame {
	from := 0
	if i > 0 {
		from = l.frames[i-1].end
	}
	l.scratch = l.scratch[:0]
	for j := from; j < l.frames[i].end; j++ {
		c, start := l.cmds[j], 0
		if j > 0 {
			start = l.cmds[j-1].end
		}
		l.scratch = append(l.scratch, sim.Command{Player: c.player, Seq: c.seq, Payload: l.payloads[start:c.end]})
	}
	return Frame{Tick: l.frames[i].tick, Commands: l.scratch}
}

// Replay applies the kept frames (and the empty ticks between them) to p through tick
// to, calling visit (if not nil) after each tick. The log must hold every non-empty frame
// from p.Next() on.
func (l *FrameLog) Replay(p *Peer, to uint64, visit func(tick uint64)) error {
	i, _ := slices.BinarySearchFunc(l.frames, p.Next(), func(f logFrame, t uint64) int { return cmp.Compare(f.tick, t) })
	for t := p.Next(); t <= to; t++ {
		f := Frame{Tick: t}
		if i < len(l.frames) && l.frames[i].tick == t {
			f = l.frame(i)
			i++
		}
		if _, _, err := p.Apply(f); err != nil {
			return err
		}
		if visit != nil {
			visit(t)
		}
	}
	return nil
}
