package loadtest

import (
	"encoding/binary"
	"fmt"

	"github.com/tickrelay/tickrelay/sim"
)

// HashChain identifies the load test's cheap simulation in the sim registry.
const (
	HashChainName    = "hashchain"
	HashChainVersion = 1
)

func init() {
	sim.Register(HashChainName, HashChainVersion, func(cfg sim.Config) (sim.Sim, error) {
		return NewHashChain(cfg), nil
	})
}

// HashChain is a deterministic simulation that costs next to nothing to step, so a
// capacity run measures the relay rather than the bots: its whole state is one FNV-1a 64
// chain over the seed, the player count, every tick and every command's (player, seq,
// payload). Two peers agree on Hash exactly when they applied the same frames.
type HashChain struct {
	state uint64
	tick  uint64
}

// NewHashChain returns the chain's state for cfg; params are ignored.
func NewHashChain(cfg sim.Config) *HashChain {
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

// appendPayload appends a bot's n-th command payload: 16 bytes that identify the match,
// the player and the count, so every command in a match is distinct.
func appendPayload(dst []byte, match int, player uint32, n uint64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(match))
	dst = binary.LittleEndian.AppendUint32(dst, player)
	return binary.LittleEndian.AppendUint64(dst, n)
}
