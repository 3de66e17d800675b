package bot

import "encoding/binary"

// AppendPayload appends a bot's n-th opaque command payload: 16 bytes that identify the
// match, the player and the count, so every command in a match is distinct. Players of a
// sim without a script (hashchain) and the load tester's swarm send it.
func AppendPayload(dst []byte, match int, player uint32, n uint64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(match))
	dst = binary.LittleEndian.AppendUint32(dst, player)
	return binary.LittleEndian.AppendUint64(dst, n)
}
