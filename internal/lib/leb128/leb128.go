// Package leb128 encodes the variable-length integers of the WebAssembly binary format
// (LEB128), once for the metering rewriter that emits code and the test kit that builds
// modules: the two must never disagree on an encoding.
package leb128

// AppendU32 appends v as an unsigned LEB128 number.
func AppendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendS64 appends v as a signed LEB128 number (i32 and i64 constants alike: a value
// that fits 32 bits encodes the same either way).
func AppendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
