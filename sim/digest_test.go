package sim_test

import (
	"encoding/binary"
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tickrelay/tickrelay/sim"
)

func TestDigestMatchesPublishedFNV1a64Vectors(t *testing.T) {
	// Test vectors from the FNV reference (Fowler/Noll/Vo, "FNV-1a 64-bit" test suite).
	tests := []struct {
		in   string
		want uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
	}
	for _, tt := range tests {
		t.Run("digest of "+tt.in+" is the published value", func(t *testing.T) {
			d := sim.NewDigest()
			d.Bytes([]byte(tt.in))
			assert.Equal(t, tt.want, d.Sum())
		})
	}
}

func TestDigestWritesIntegersLittleEndianLikeHashFNV(t *testing.T) {
	// hash/fnv is an independent implementation: feeding it the little-endian bytes must
	// give the same sum as the typed writers.
	d := sim.NewDigest()
	d.U64(0x0102030405060708)
	d.U32(0xdeadbeef)
	d.I64(-2)
	d.Bool(true)
	d.Bool(false)
	d.Byte(0x7f)

	var buf []byte
	buf = binary.LittleEndian.AppendUint64(buf, 0x0102030405060708)
	buf = binary.LittleEndian.AppendUint32(buf, 0xdeadbeef)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(0xfffffffffffffffe))
	buf = append(buf, 1, 0, 0x7f)
	ref := fnv.New64a()
	_, _ = ref.Write(buf)

	assert.Equal(t, ref.Sum64(), d.Sum())
}

func TestDigestDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		d := sim.NewDigest()
		d.U64(42)
		d.Bytes([]byte("state"))
		_ = d.Sum()
	})
	assert.Zero(t, allocs)
}
