package replay

import "github.com/tickrelay/tickrelay/stream"

// FormatVersion is the replay format this build writes. It reads it and every earlier
// one. A file holds the stream, so its version is the stream's (stream.Version): version
// 2 added packed frames to version 1, version 3 crc records and the lobby (see
// docs/replay-format.md).
const FormatVersion = stream.Version

// Magic opens every replay file. Like PNG's, it has a high-bit byte and CR LF / LF / ^Z
// so that a 7-bit or line-ending-converting transfer is caught at once.
var Magic = [8]byte{0x89, 'T', 'K', 'R', '\r', '\n', 0x1a, '\n'}
