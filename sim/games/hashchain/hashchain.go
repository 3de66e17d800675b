package hashchain

import (
	"encoding/binary"
	"fmt"

	"github.com/tickrelay/tickrelay/sim"
)

// Name and Version identify the hash chain in the sim registry.
const (
	Name    = "hashchain"
	Version = 1
)

func init() {
	sim.Register(Name, Version, func(cfg sim.Config) (sim.Sim, error) {
		return New(cfg), nil
	})
}

// HashChain is a deterministic simulation that costs next to nothing to step: its whole
// state is one FNV-1a 64 chain over the seed, the player count, every tick and every
// command's (player, seq, payload). Two peers agree on Hash exactly when they applied the
// same frames.
type HashChain struct {
	state uint64
	tick  uint64
}

// New returns the chain's state for cfg; params are ignored.
func New(cfg sim.Config) *HashChain {
	d := sim.NewDigest()
	d.U64(cfg.Seed)
	d.U32(uint32(cfg.Players))
	return &HashChain{state: d.Sum()}
}

// Step mixes tick and its commands, in the order given, into the chain.
func (h *HashChain) Step(tick uint64, cmds []sim.Command) {
	d := sim.NewDigest()
	d.U64(h.state)
	d.U64(tick)
	for i := range cmds {
		d.U32(cmds[i].Player)
		d.U32(cmds[i].Seq)
		d.U32(uint32(len(cmds[i].Payload)))
		d.Bytes(cmds[i].Payload)
	}
	h.state = d.Sum()
	h.tick = tick + 1
}

// Hash returns the chain so far.
func (h *HashChain) Hash() uint64 { return h.state }

// Snapshot encodes the state: the chain and the next tick, 16 bytes.
func (h *HashChain) Snapshot() []byte {
	b := binary.LittleEndian.AppendUint64(nil, h.state)
	return binary.LittleEndian.AppendUint64(b, h.tick)
}

// Restore sets the state from a Snapshot.
func (h *HashChain) Restore(b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("%w: a hashchain snapshot is 16 bytes, got %d", sim.ErrBadConfig, len(b))
	}
	h.state = binary.LittleEndian.Uint64(b)
	h.tick = binary.LittleEndian.Uint64(b[8:])
	return nil
}
