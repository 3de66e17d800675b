package wsconn

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
)

// Buffer sizes of a connection. net/http hands a hijacker its 4 KiB reader and 4 KiB
// writer, which the WebSocket library keeps for the connection's life: 8 KiB of an idle
// connection's cost. Client messages are tens of bytes, and a tick's frame for 8 players
// is a few hundred, so these hold any usual message in one read and one write (a larger
// one, a catch-up chunk, takes one more syscall).
const (
	ReadBuffer  = 1 << 10
	WriteBuffer = 2 << 10
)

// hijacker is a ResponseWriter whose Hijack hands over the connection as a Conn, with
// buffers of ReadBuffer and WriteBuffer bytes instead of net/http's.
type hijacker struct {
	http.ResponseWriter
	conn **Conn // where Hijack leaves the connection it took over
}

func (w hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The library gets c, not nc: it reads and writes the connection through c. Bytes
	// the client sent right after its request are in net/http's reader: move them into
	// the new reader's buffer (the library re-reads its reader's buffered bytes and then
	// reads the connection it was given). net/http flushed the response header before
	// handing the connection over, so its writer holds nothing.
	c := New(nc)
	n := brw.Reader.Buffered()
	br := bufio.NewReaderSize(c, max(ReadBuffer, n))
	if n > 0 {
		early, _ := brw.Reader.Peek(n)
		br.Reset(io.MultiReader(bytes.NewReader(bytes.Clone(early)), c))
		if _, err := br.Peek(n); err != nil {
			return nil, nil, err
		}
	}
	*w.conn = c
	return c, bufio.NewReadWriter(br, bufio.NewWriterSize(c, WriteBuffer)), nil
}

// Unwrap lets http.ResponseController reach the ResponseWriter underneath.
func (w hijacker) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Wrap returns w for websocket.Accept: once Accept takes the connection over, *conn is
// it, as a Conn. If the connection under w cannot be taken over (neither w nor a writer
// its Unwrap chain reaches is an http.Hijacker), Wrap returns w itself, and the upgrade
// fails as it would without the wrapper (501, before any status is written).
func Wrap(w http.ResponseWriter, conn **Conn) http.ResponseWriter {
	for rw := w; ; {
		switch t := rw.(type) {
		case http.Hijacker:
			return hijacker{w, conn}
		case interface{ Unwrap() http.ResponseWriter }:
			rw = t.Unwrap()
		default:
			return w
		}
	}
}
