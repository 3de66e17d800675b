// The crc record: the integrity check of a stream (format version 3). The stream is cut
// into blocks, each ended by a crc record holding the CRC-32C of the block's bytes, so a
// damaged byte anywhere is found as damage to the block that holds it. Blocks, not
// records: a tick with one 8-byte command stays 13 bytes, and a crc record (6 bytes)
// follows every few dozen ticks.

package stream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"google.golang.org/protobuf/encoding/protowire"
)

// CRCVersion is the first stream (and replay file) version with crc records.
const CRCVersion = 3

// MaxBlock bounds a block: a writer ends a block with a crc record at the latest right
// after the record that brings it to MaxBlock bytes or more. So in a version 3 stream a
// record that starts MaxBlock bytes or more past its block's start is a crc record, or
// the stream is damaged.
const MaxBlock = 4096

// CRCRecordSize is the size of a crc record: tag, length 4, the sum.
const CRCRecordSize = 6

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Block is the running CRC-32C of one block of a stream: the bytes since the previous
// crc record (or since the start record). The zero value is an empty block.
type Block struct {
	sum uint32
	n   int
}

// Add adds stream bytes to the block.
func (b *Block) Add(p []byte) {
	b.sum = crc32.Update(b.sum, castagnoli, p)
	b.n += len(p)
}

// Len returns the block's length in bytes.
func (b *Block) Len() int { return b.n }

// Sum returns the CRC-32C of the block's bytes.
func (b *Block) Sum() uint32 { return b.sum }

// Reset empties the block: a crc record was written or read.
func (b *Block) Reset() { *b = Block{} }

// AppendCRC appends a crc record holding sum.
func AppendCRC(dst []byte, sum uint32) []byte {
	dst = protowire.AppendTag(dst, fieldCRC, protowire.BytesType)
	dst = protowire.AppendVarint(dst, 4)
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// CRCOf returns the sum a decoded crc record's body holds.
func CRCOf(body []byte) (uint32, error) {
	if len(body) != 4 {
		return 0, fmt.Errorf("%w: a crc record of %d bytes, want 4", ErrCRC, len(body))
	}
	return binary.LittleEndian.Uint32(body), nil
}

// CRCBody returns the body of rec, one whole record, if it is a crc record: by its first
// byte, the tag as AppendCRC writes it (a reader checks a block's sum before it decodes
// any of its records). A crc record whose tag is written longer is not one, and its
// block has no end where it stands; decoded, it is a crc record inside a block.
func CRCBody(rec []byte) (body []byte, ok bool) {
	if len(rec) == 0 || rec[0] != crcTag {
		return nil, false
	}
	body, n := protowire.ConsumeBytes(rec[1:])
	return body, n >= 0
}

// crcTag is a crc record's first byte.
var crcTag = protowire.AppendTag(nil, fieldCRC, protowire.BytesType)[0]

// Check ends the block with a decoded crc record's body: it fails, naming both sums, if
// the block's bytes do not have the sum the record holds, and empties the block.
func (b *Block) Check(body []byte) error {
	want, err := CRCOf(body)
	if err != nil {
		return err
	}
	got, n := b.sum, b.n
	b.Reset()
	if got != want {
		return fmt.Errorf("%w: the %d bytes before this crc record have CRC-32C %08x, the record says %08x: they are damaged", ErrCRC, n, got, want)
	}
	return nil
}
