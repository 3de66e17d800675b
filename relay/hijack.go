// Smaller connection buffers than net/http's.

package relay

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
)

// Buffer sizes of a WebSocket connection. net/http hands a hijacker its 4 KiB reader and
// 4 KiB writer, which the WebSocket library keeps for the connection's life: 8 KiB of an
// idle connection's cost. Client messages are tens of bytes, and a tick's frame for 8
// players is a few hundred, so these hold any usual message in one read and one write
// (a larger one, a catch-up chunk, takes one more syscall).
const (
	connReadBuffer  = 1 << 10
	connWriteBuffer = 2 << 10
)

// smallBuffers is a ResponseWriter whose Hijack returns the connection with buffers of
// connReadBuffer and connWriteBuffer bytes instead of net/http's.
type smallBuffers struct {
	http.ResponseWriter
	conn **rawConn // where Hijack leaves the connection it took over
}

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The library gets rc, not c: it reads the connection through rc's Read (raw reads,
	// rawConn). Bytes the client sent right after its request are in net/http's reader:
	// move them into the new reader's buffer (the WebSocket library re-reads its reader's
	// buffered bytes and then reads the connection it was given). net/http flushed the
	// response header before handing the connection over, so its writer holds nothing.
	rc := newRawConn(c)
	n := brw.Reader.Buffered()
	br := bufio.NewReaderSize(rc, max(connReadBuffer, n))
	if n > 0 {
		early, _ := brw.Reader.Peek(n)
		br.Reset(io.MultiReader(bytes.NewReader(bytes.Clone(early)), rc))
		if _, err := br.Peek(n); err != nil {
			return nil, nil, err
		}
	}
	*w.conn = rc
	// The library writes through rc's lock, so its frames and the relay's pre-framed
	// writes never interleave (rawConn).
	return rc, bufio.NewReadWriter(br, bufio.NewWriterSize(libWriter{rc}, connWriteBuffer)), nil
}

// Unwrap lets http.ResponseController reach the ResponseWriter underneath.
func (w smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withSmallBuffers wraps w in smallBuffers if the connection under it can be taken over
// (w, or a writer its Unwrap chain reaches, is an http.Hijacker), and the connection is
// left in *conn once taken; otherwise it returns w, and the upgrade fails as it would
// without the wrapper (501, before any status).
func withSmallBuffers(w http.ResponseWriter, conn **rawConn) http.ResponseWriter {
	for rw := w; ; {
		switch t := rw.(type) {
		case http.Hijacker:
			return smallBuffers{w, conn}
		case interface{ Unwrap() http.ResponseWriter }:
			rw = t.Unwrap()
		default:
			return w
		}
	}
}
