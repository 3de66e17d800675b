package lockstep

import (
	"cmp"

	"github.com/tickrelay/tickrelay/sim"
)

// Frame is one sealed tick: the commands accepted for it in canonical (player, seq) order.
type Frame struct {
	Tick     uint64
	Commands []sim.Command
}

// IsCheckpoint reports whether peers report a checksum after applying tick: every `every`
// ticks of progress, i.e. when (tick+1) % every == 0. every == 0 means never.
func IsCheckpoint(tick, every uint64) bool {
	return every != 0 && (tick+1)%every == 0
}

// Clone returns a deep copy of f that owns its Commands and payloads, for keeping a frame
// from Schedule.Seal past the next Seal. Empty payloads stay nil.
func (f Frame) Clone() Frame {
	if f.Commands == nil {
		return Frame{Tick: f.Tick}
	}
	size := 0
	for _, c := range f.Commands {
		size += len(c.Payload)
	}
	buf := make([]byte, 0, size)
	cmds := make([]sim.Command, len(f.Commands))
	for i, c := range f.Commands {
		cmds[i] = sim.Command{Player: c.Player, Seq: c.Seq}
		if len(c.Payload) > 0 {
			start := len(buf)
			buf = append(buf, c.Payload...)
			cmds[i].Payload = buf[start:len(buf):len(buf)]
		}
	}
	return Frame{Tick: f.Tick, Commands: cmds}
}

// Canonical reports whether f's commands are in canonical order: strictly increasing by
// (player, seq), so no (player, seq) pair appears twice. Frames from Schedule.Seal always
// are; a reader can use it to check frames from elsewhere.
func (f Frame) Canonical() bool {
	for i := 1; i < len(f.Commands); i++ {
		if compareCommands(f.Commands[i-1], f.Commands[i]) >= 0 {
			return false
		}
	}
	return true
}

// compareCommands orders commands by (player, seq): the canonical order within a tick.
func compareCommands(a, b sim.Command) int {
	if c := cmp.Compare(a.Player, b.Player); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}
