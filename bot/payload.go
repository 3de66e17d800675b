package bot

import (
	"encoding/binary"

	"github.com/tickrelay/tickrelay/sim"
)

// AppendPayload appends a bot's n-th opaque command payload: 16 bytes that identify the
// match, the player and the count, so every command in a match is distinct. Players of a
// sim without a script (hashchain) and the load tester's swarm send it.
func AppendPayload(dst []byte, match int, player uint32, n uint64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(match))
	dst = binary.LittleEndian.AppendUint32(dst, player)
	return binary.LittleEndian.AppendUint64(dst, n)
}

// ScriptlessPayload appends the n-th command payload of a player without a script of
// the sim (any sim but skirmish): one of the sim's sample commands (sim.Sampler), picked
// by the seed, the player and n, or, for a sim without samples, AppendPayload's 16
// opaque bytes. Bots, the load tester and `sim run` send these.
func ScriptlessPayload(dst []byte, s sim.Sim, seed uint64, match int, player uint32, n uint64) []byte {
	if sm, ok := s.(sim.Sampler); ok {
		if samples := sm.SamplePayloads(); len(samples) > 0 {
			// splitmix64 of the three: the same choice on every run and platform.
			x := seed ^ uint64(match)<<48 ^ uint64(player)<<32 ^ n
			x += 0x9e3779b97f4a7c15
			x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
			x = (x ^ x>>27) * 0x94d049bb133111eb
			x ^= x >> 31
			return append(dst, samples[x%uint64(len(samples))]...)
		}
	}
	return AppendPayload(dst, match, player, n)
}
