package relay

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAFramedMessageIsOneUnmaskedBinaryWebSocketMessageOfItsBytes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 70000} {
		m := oneOff(bytes.Repeat([]byte{7}, n))
		m.frameWS()
		f := m.framed
		require.GreaterOrEqual(t, len(f), 2, "size %d", n)
		assert.Equal(t, byte(0x82), f[0], "FIN and the binary opcode (size %d)", n)
		assert.Zero(t, f[1]&0x80, "a server's message is not masked (size %d)", n)
		size, hdr := int(f[1]), 2
		switch size {
		case 126:
			size, hdr = int(binary.BigEndian.Uint16(f[2:])), 4
		case 127:
			size, hdr = int(binary.BigEndian.Uint64(f[2:])), 10
		}
		assert.Equal(t, n, size, "the header's length")
		assert.Equal(t, m.b, f[hdr:], "the payload is the message's bytes (size %d)", n)
	}
}
