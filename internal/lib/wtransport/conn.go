package wtransport

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// Conn is one WebTransport session and the bidirectional stream it was opened with: a
// net.Conn over the stream, plus the session's datagrams. Close ends both.
type Conn struct {
	sess    *webtransport.Session
	str     *webtransport.Stream
	onClose func() // the client's transport, closed with the session; nil on the relay
	once    sync.Once
	// out holds datagrams for the writer (SendDatagramNoWait), free their buffers.
	out, free chan []byte
}

// DatagramQueue is how many datagrams SendDatagramNoWait holds for a Conn's writer.
const DatagramQueue = 8

// newConn starts the Conn's datagram writer, which ends with the session.
func newConn(sess *webtransport.Session, str *webtransport.Stream, onClose func()) *Conn {
	c := &Conn{sess: sess, str: str, onClose: onClose, out: make(chan []byte, DatagramQueue), free: make(chan []byte, DatagramQueue)}
	for range DatagramQueue {
		c.free <- nil
	}
	go c.writeDatagrams()
	return c
}

// writeDatagrams sends what SendDatagramNoWait queued: the library's send blocks while
// its own queue is full (a peer that does not take datagrams, or congestion), and only
// this goroutine waits for it.
func (c *Conn) writeDatagrams() {
	done := c.sess.Context().Done()
	for {
		select {
		case b := <-c.out:
			_ = c.SendDatagram(b) // lost or refused: a datagram may be
			c.free <- b
		case <-done:
			return
		}
	}
}

// SendDatagramNoWait queues a copy of b for the Conn's datagram writer and returns at
// once: false when DatagramQueue datagrams are waiting already, and b is dropped. It
// allocates nothing once the queue's buffers have grown to the datagrams' size.
func (c *Conn) SendDatagramNoWait(b []byte) bool {
	select {
	case buf := <-c.free:
		c.out <- append(buf[:0], b...)
		return true
	default:
		return false
	}
}

var _ net.Conn = (*Conn)(nil)

func (c *Conn) Read(b []byte) (int, error)  { return c.str.Read(b) }
func (c *Conn) Write(b []byte) (int, error) { return c.str.Write(b) }

// Close closes the stream and the session (and a client's QUIC connection).
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.str.CancelRead(0)
		_ = c.str.Close()
		_ = c.sess.CloseWithError(0, "")
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

func (c *Conn) LocalAddr() net.Addr                { return c.sess.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr               { return c.sess.RemoteAddr() }
func (c *Conn) SetDeadline(t time.Time) error      { return c.str.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.str.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.str.SetWriteDeadline(t) }

// Context ends when the session does.
func (c *Conn) Context() context.Context { return c.sess.Context() }

// SendDatagram sends b as one unreliable datagram of the session; it never blocks. A
// datagram larger than the path allows is ErrDatagramTooLarge; b may be reused at once.
func (c *Conn) SendDatagram(b []byte) error {
	err := c.sess.SendDatagram(b)
	var tooLarge *quic.DatagramTooLargeError
	if errors.As(err, &tooLarge) {
		return ErrDatagramTooLarge
	}
	return err
}

// ReceiveDatagram waits for the session's next datagram (the caller owns it).
func (c *Conn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	return c.sess.ReceiveDatagram(ctx)
}
