// Package wsconn is the relay's side of a player's WebSocket connection below the
// WebSocket library (github.com/coder/websocket): the connection the library is handed
// when it takes an HTTP request over, written by two writers, and the framing of the
// messages the relay writes itself.
//
// The relay encodes each tick's frame once and writes the same bytes, already framed as
// a WebSocket message (AppendBinary), to every subscriber: one write call per connection
// instead of the library framing the bytes again for each. The library still owns the
// protocol (the handshake, reads, pings and pongs, the closing handshake) and writes its
// own messages. Both write whole frames under one lock (Conn), so their bytes never
// interleave; a non-blocking write the socket takes only part of keeps its rest, written
// first by whoever takes the lock next.
//
// What this relies on in coder/websocket v1.8.15, each pinned by a test in
// library_test.go that fails if an upgrade changes it:
//
//   - Accept takes the connection over through the http.Hijacker that the ResponseWriter
//     is or unwraps to (Wrap), and keeps the reader and writer Hijack returns for the
//     connection's life: its reads come through Conn.Read, its writes through a writer of
//     WriteBuffer bytes into Conn.Write, never around them.
//   - The library flushes its writer at the end of every frame it finishes (every
//     control frame and every message of a single Write): a frame that fits the writer
//     reaches Conn.Write in one call that starts with the frame's first byte. So a close
//     frame begins a write (CloseFrame), and the lock held for one Conn.Write call
//     never splits a small frame of the library's.
//   - A server's frames are unmasked: a message framed by AppendBinary reads, on any
//     client, as a message the library wrote.
//
// The relay's part of the bargain: it writes only whole frames (WriteLocked), and writes
// nothing directly after the close frame (Conn marks itself dead when the library writes
// one) or while a message of the library's larger than its writer is under way (the
// relay's session never writes directly while its writer goroutine is busy).
package wsconn
