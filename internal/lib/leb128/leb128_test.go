package leb128

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEncodingsAreTheSpecsExamples: the WebAssembly and DWARF examples, and every
// unsigned value agreeing with the standard library's uvarint.
func TestEncodingsAreTheSpecsExamples(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0x00}}, {2, []byte{0x02}}, {-2, []byte{0x7e}}, {127, []byte{0xff, 0x00}}, {-127, []byte{0x81, 0x7f}},
		{128, []byte{0x80, 0x01}}, {-128, []byte{0x80, 0x7f}}, {-123456, []byte{0xc0, 0xbb, 0x78}},
		{math.MinInt64, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}},
	} {
		assert.Equal(t, tc.want, AppendS64(nil, tc.v), "%d", tc.v)
	}
	for _, v := range []uint32{0, 1, 127, 128, 624485, math.MaxUint32} {
		assert.Equal(t, binary.AppendUvarint(nil, uint64(v)), AppendU32(nil, v), "%d", v)
	}
	assert.Equal(t, []byte{0xe5, 0x8e, 0x26}, AppendU32(nil, 624485))
}
