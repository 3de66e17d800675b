package wsconn

import "encoding/binary"

// AppendBinary appends payload to dst as one unmasked binary WebSocket message (RFC 6455
// 5.2: FIN, opcode 2, the shortest length encoding) and returns the extended slice.
func AppendBinary(dst, payload []byte) []byte {
	n := len(payload)
	switch {
	case n < 126:
		dst = append(dst, 0x82, byte(n))
	case n < 1<<16:
		dst = append(dst, 0x82, 126, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint64(append(dst, 0x82, 127), uint64(n))
	}
	return append(dst, payload...)
}

// CloseFrame is the first byte of a server's close frame (FIN, opcode 8), which the
// library writes, as every control frame, in one flush of its own.
const CloseFrame = 0x88
