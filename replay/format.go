package replay

import (
	"encoding/binary"

	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/stream"
)

// FormatVersion is the replay format this build writes. It reads it and every earlier
// one. A file holds the stream, so its version is the stream's (stream.Version): version
// 2 added packed frames to version 1, version 3 crc records and the lobby (see
// docs/replay-format.md).
const FormatVersion = stream.Version

// Magic opens every replay file. Like PNG's, it has a high-bit byte and CR LF / LF / ^Z
// so that a 7-bit or line-ending-converting transfer is caught at once.
var Magic = [8]byte{0x89, 'T', 'K', 'R', '\r', '\n', 0x1a, '\n'}

// HeaderSize is the size of a file's header: the magic and the format version as a
// uvarint, one byte for every version so far (a test holds it to AppendHeader). The
// Start record begins at this offset; a spectator that saves its stream writes the
// header first and then every record it receives.
const HeaderSize = 9 // len(Magic) + 1

// AppendHeader appends the header of a file of this build's format (magic, then
// FormatVersion as a uvarint) to dst and returns the result.
func AppendHeader(dst []byte) []byte {
	dst = append(dst, Magic[:]...)
	return binary.AppendUvarint(dst, FormatVersion)
}

// MaxTick is the last tick a file may cover (lockstep.MaxTick): a frame or idle record
// past it is damage.
const MaxTick = lockstep.MaxTick
