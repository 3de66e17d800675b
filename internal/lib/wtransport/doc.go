// Package wtransport is the project's one door to WebTransport (HTTP/3 over QUIC, over
// UDP): the relay's listener, the client's dialer, the connection both get, and the
// short-lived certificates a browser accepts by hash. The libraries behind it
// (github.com/quic-go/quic-go and github.com/quic-go/webtransport-go, both pre-1.0 and
// pinned in go.mod) are imported here and nowhere else.
//
// Use Listen to serve WebTransport sessions on a UDP address: each session the client
// opens with one bidirectional stream becomes a *Conn that Accept returns, a net.Conn
// over that stream. Use Dial to open such a session (and its stream) from a client.
// Use NewCertificates for a relay with no certificate of its own: a self-signed ECDSA
// certificate valid for less than the 14 days that serverCertificateHashes allows,
// rotated before it expires, whose SHA-256 hashes a client pins (Hashes).
//
// # The stream
//
// A Conn's byte stream is reliable and ordered, like TCP's: the relay speaks its
// WebSocket protocol over it unchanged (an HTTP upgrade, then WebSocket messages), so
// every message, limit and close code of the WebSocket path holds on it. What
// WebTransport adds is the unreliable datagrams of the same session (SendDatagram,
// ReceiveDatagram), which never wait behind a lost packet.
//
// # Limits
//
// A session opens exactly one stream, within the accept timeout; anything else the peer
// opens is refused. Accept's queue is bounded: a session that finds it full is closed.
// Datagrams larger than the path allows fail to send (ErrDatagramTooLarge), and a peer's
// datagrams beyond the library's receive queue (128) are dropped by the library.
package wtransport
