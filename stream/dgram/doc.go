// Package dgram is the format of the datagrams a WebTransport session carries beside
// its stream: the relay's sealed frames, each datagram bundling the newest few, and a
// player's commands. Both ends use it; neither trusts what it reads.
//
// Use Bundler on the relay to keep the last frames' records and build one datagram per
// tick for every player; DecodeFrames on a client to read one. Use AppendCommands on a
// client and DecodeCommands on the relay for commands.
//
// # Format
//
// The first byte is the kind. A frames datagram (KindFrames) is then the highest seq of
// the receiving player's commands the relay has (a uvarint; 0: none yet) and one to
// MaxBundle stream records (stream.AppendFrame's bytes, as the stream carries them), in
// ascending tick order: a client that lost the datagrams of the last few ticks finds
// their frames in the next one. A command datagram (KindCommand) is then one to
// MaxCommands commands in ascending seq order, each a uvarint length and an encoded
// tickrelay.v1.ClientMessage holding a Command, the bytes the stream would carry. A ping
// datagram (KindPing) is then a nonce (a uvarint); the relay sends it straight back.
//
// # Resent until acknowledged
//
// A client sends each command as a datagram together with every earlier one the relay
// has not acknowledged (the acked seq of its frames datagrams, or the stream's
// CommandAck), and sends them again each tick until it is acknowledged: a lost datagram
// costs a command one tick, not a retransmission of the stream. The relay takes each
// (player, seq) once and in order, whichever copy comes first.
//
// # The round trip a command sees
//
// A client on WebTransport times its round trip with ping datagrams and reports that
// (Ping.rtt_us on the stream), not the stream's: its commands go as datagrams, and a
// stream ping held up by one lost packet would make the relay suggest an input delay
// for a retransmission the commands never wait for.
//
// # What a datagram does not replace
//
// The stream still carries every command, and every frame unless the player asked for
// its frames as datagrams alone (tickrelay.v1.Join.datagram_frames; it then asks the
// stream for what they missed): a datagram is a fast path that a lost packet cannot
// hold up, and the stream the reliable one. The replay file and spectators' bytes are
// the stream's, unchanged.
package dgram
