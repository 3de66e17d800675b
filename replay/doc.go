// Package replay implements tickrelay's replay file (.tkr): a match's merged stream as
// the relay recorded it, behind a header (Magic and FormatVersion, HeaderSize bytes).
// The records themselves are the live stream's, coded by package stream; the format is
// specified in docs/replay-format.md.
//
// Use Create or NewWriter to record a match as its ticks are sealed: Frame for every
// tick (empty ticks coalesce into idle records), Checkpoint and Record for the rest, and
// Close for the end record with its seek index. Use Reopen to append to a file a killed
// relay left unfinished.
//
// Use Open or NewReader to stream records with every rule of the format checked, and
// Load or LoadFile to read a whole file into a Replay. On a Replay, use Verify to
// re-simulate it against its checkpoints (or an expected hash stream), Diff to find the
// first tick at which two replays diverge, NewSeeker to move a simulation to any tick,
// and Summarize for what the file holds.
//
// # Errors
//
// Bad bytes are always an error, never a panic: *TruncatedError where a file is cut
// (a crashed relay's file loads with Replay.Cut set and everything before the cut),
// *CorruptError with the byte offset where a record breaks a rule, ErrNotReplay and
// ErrVersion for what is not a file this build reads. Verify returns *IdentityError when
// the file needs another sim, version or config, and *DivergenceError naming the first
// tick that disagrees.
//
// # Integrity
//
// From format version 3 the stream is cut into blocks, each ended by a crc record (the
// CRC-32C of its bytes; stream.Block). A Reader believes a block's records only once its
// sum matched, so a damaged byte is a *CorruptError at the block's first byte, never a
// different record. The last block of a cut file has no crc record yet: its records are
// read unchecked, and TruncatedError.Unchecked (Replay.Checked) says how many bytes.
// A version 3 file also has a lobby: the records before the STARTED event, which a file
// of a match that never started lacks (Replay.Started; WriterOptions.Lobby, Begin).
//
// # Writing
//
// Each Writer method writes its records to the destination in one Write call before it
// returns, so a crash never leaves more than a torn last record (which Reopen cuts off);
// WriterOptions.Sync says when to fsync. Errors are sticky. Ticks missing from a cut file
// were always empty, and at most Start.idle_flush-1 of them.
//
// # Concurrency
//
// A Writer, Reader or Seeker has one owner. A loaded Replay is read-only and may be
// shared. The package never logs and never touches a socket.
package replay
