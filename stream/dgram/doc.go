// Package dgram is the format of the datagrams a WebTransport session carries beside
// its stream: the relay's sealed frames, each datagram bundling the newest few, and a
// player's commands. Both ends use it; neither trusts what it reads.
//
// Use Bundler on the relay to keep the last frames' records and build one datagram per
// tick for every player; DecodeFrames on a client to read one. Use AppendCommand on a
// client and DecodeCommand on the relay for a command.
//
// # Format
//
// The first byte is the kind. A frames datagram (KindFrames) is then one to MaxBundle
// stream records (stream.AppendFrame's bytes, as the stream carries them), in ascending
// tick order: a client that lost the datagrams of the last few ticks finds their frames
// in the next one. A command datagram (KindCommand) is then one encoded
// tickrelay.v1.ClientMessage holding a Command, the bytes the stream would carry.
//
// # What a datagram does not replace
//
// The stream still carries every frame and command: a datagram is a fast path that a lost
// packet cannot hold up, and the stream the reliable one (a frame or command whose
// datagrams were all lost arrives there). The replay file and spectators' bytes are the
// stream's, unchanged.
package dgram
