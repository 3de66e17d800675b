// The message a tick is encoded into once and shared by every queue it goes on.

package relay

import (
	"sync/atomic"

	"github.com/tickrelay/tickrelay/relay/internal/wsconn"
)

// message is encoded bytes shared by every connection it is queued on: the relay encodes
// each frame once and writes the same bytes to every subscriber, never a copy per
// recipient. A reference count returns the buffer to its pool when the last writer is
// done with it, so steady-state ticks allocate nothing.
type message struct {
	b    []byte
	refs atomic.Int32
	pool *messagePool // nil for one-off messages
	// closeAfter asks the writer to close the connection after writing b (end of match).
	closeAfter bool
	// stream marks b as a slice of the match's stream (whole records, possibly large):
	// the writer sends it in messages of at most maxChunk bytes split at record
	// boundaries, so a long catch-up takes one queue slot, not thousands.
	stream bool
	// src, when set, is the stream's file: the writer reads [from, to) from it (a
	// catch-up older than what memory holds) instead of b.
	src      *fileRef
	from, to int64
	// framed is b as one whole server WebSocket message (header and payload), built
	// once by frameWS for every recipient: a writer that holds the raw connection
	// writes it in one call instead of the library framing b for each connection.
	framed []byte
}

// frameWS sets m.framed to b as one whole binary WebSocket message.
func (m *message) frameWS() { m.framed = wsconn.AppendBinary(m.framed[:0], m.b) }

// release drops one reference.
func (m *message) release() {
	if m.refs.Add(-1) != 0 {
		return
	}
	if m.src != nil {
		m.src.release()
		m.src = nil
	}
	if m.pool != nil {
		m.pool.put(m)
	}
}

// oneOff wraps bytes for a single recipient.
func oneOff(b []byte) *message {
	m := &message{b: b}
	m.refs.Store(1)
	return m
}

// messagePool is a bounded free list of messages.
type messagePool struct {
	free chan *message
}

func newMessagePool(n int) *messagePool { return &messagePool{free: make(chan *message, n)} }

// get returns a message with an empty buffer and one reference (the caller's).
func (p *messagePool) get() *message {
	var m *message
	select {
	case m = <-p.free:
		m.b, m.framed = m.b[:0], m.framed[:0]
	default:
		m = &message{pool: p, b: make([]byte, 0, 256)}
	}
	m.refs.Store(1)
	return m
}

func (p *messagePool) put(m *message) {
	select {
	case p.free <- m:
	default: // the pool is full: let the GC have it
	}
}
