// Package testsim holds sims for tests of the relay and its clients: Tally, which goes
// wrong on purpose in one subsystem at a chosen tick (desync forensics). Importing it
// registers Tally as "tally" version 1; its params (8 bytes, little-endian, or none) are
// the tick it goes wrong at, so a test gives one player's sim other params than the
// match's. internal/testkit/testsim/module builds it as a WebAssembly module.
package testsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/tickrelay/tickrelay/sim"
)

// Tally is a small sim with two subsystems: the clock (the ticks stepped) and the
// players (how many commands each sent). With bugAt set, the instance adds one to player
// 2's count at that tick: a peer whose sim goes wrong in the "players" subsystem.
type Tally struct {
	ticks    uint64
	counts   []uint64
	bugAt    uint64 // 0: no bug
	bugEvery uint64 // 0: no recurring bug
	flicker  uint64 // 0: none
}

// Name and Version are what a match of Tally names.
const (
	Name    = "tally"
	Version = 1
)

func init() {
	sim.Register(Name, Version, func(cfg sim.Config) (sim.Sim, error) {
		var bugAt uint64
		switch len(cfg.Params) {
		case 0:
		case 8:
			bugAt = binary.LittleEndian.Uint64(cfg.Params)
		default:
			return nil, fmt.Errorf("%w: tally params are the tick it goes wrong at, 8 bytes, got %d", sim.ErrBadConfig, len(cfg.Params))
		}
		return NewTally(cfg.Players, bugAt), nil
	})
}

// BugAt is the params of a Tally that goes wrong at tick.
func BugAt(tick uint64) []byte { return binary.LittleEndian.AppendUint64(nil, tick) }

// NewTally returns a Tally for players players that goes wrong at tick bugAt (0: never).
func NewTally(players int, bugAt uint64) *Tally {
	return &Tally{counts: make([]uint64, players), bugAt: bugAt}
}

// NewFlickering returns a Tally whose hash (not its state) is off during every other run
// of every ticks: a peer that disagrees at one checkpoint and agrees at the next, for
// ever — the sim that desyncs at every other checkpoint.
func NewFlickering(players int, every uint64) *Tally {
	return &Tally{counts: make([]uint64, players), flicker: every}
}

// NewRecurring returns a Tally that goes wrong as bugAt does at every tick t with
// t%every == every/2: a peer that a heal puts right only until the next time.
func NewRecurring(players int, every uint64) *Tally {
	return &Tally{counts: make([]uint64, players), bugEvery: every}
}

// Step counts the tick's commands per player (and goes wrong at bugAt).
func (t *Tally) Step(tick uint64, cmds []sim.Command) {
	for _, c := range cmds {
		if i := int(c.Player) - 1; i >= 0 && i < len(t.counts) {
			t.counts[i]++
		}
	}
	if (t.bugAt != 0 && tick == t.bugAt) || (t.bugEvery != 0 && tick%t.bugEvery == t.bugEvery/2) {
		t.counts[1]++
	}
	t.ticks++
}

func (t *Tally) clockHash() uint64 { d := sim.NewDigest(); d.U64(t.ticks); return d.Sum() }
func (t *Tally) playersHash() uint64 {
	d := sim.NewDigest()
	for _, c := range t.counts {
		d.U64(c)
	}
	return d.Sum()
}

// Hash mixes the two subsystems' hashes.
func (t *Tally) Hash() uint64 {
	h := t.clockHash() ^ t.playersHash()*31
	if t.flicker != 0 && (t.ticks/t.flicker)%2 == 1 {
		h ^= 1
	}
	return h
}

// SubHashes names the clock's and the players' hashes.
func (t *Tally) SubHashes() []sim.NamedHash {
	return []sim.NamedHash{{Name: "clock", Hash: t.clockHash()}, {Name: "players", Hash: t.playersHash()}}
}

// Dump writes a line for the clock, then one per player.
func (t *Tally) Dump(w io.Writer) error {
	fmt.Fprintf(w, "clock ticks=%d\n", t.ticks)
	for i, c := range t.counts {
		fmt.Fprintf(w, "player %d commands=%d\n", i+1, c)
	}
	return nil
}

// Snapshot encodes the ticks and the counts.
func (t *Tally) Snapshot() []byte {
	b := binary.LittleEndian.AppendUint64(nil, t.ticks)
	for _, c := range t.counts {
		b = binary.LittleEndian.AppendUint64(b, c)
	}
	return b
}

// Restore decodes a Snapshot.
func (t *Tally) Restore(b []byte) error {
	if len(b) != 8*(1+len(t.counts)) {
		return errors.New("tally: a snapshot is 8 bytes, then 8 a player")
	}
	t.ticks = binary.LittleEndian.Uint64(b)
	for i := range t.counts {
		t.counts[i] = binary.LittleEndian.Uint64(b[8+8*i:])
	}
	return nil
}
