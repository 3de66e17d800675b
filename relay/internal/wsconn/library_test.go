package wsconn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the package relies on in coder/websocket (doc.go), each pinned by a test here
// against the library itself: an upgrade that changes one of them fails the test that
// names it.

// recorder is a connection that keeps every write made to it. It is not a syscall.Conn,
// so a Conn over it writes through its Write (no raw writes around it).
type recorder struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
	read   int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, bytes.Clone(p))
	r.mu.Unlock()
	return r.Conn.Write(p)
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.read += n
	r.mu.Unlock()
	return n, err
}

func (r *recorder) taken() (writes [][]byte, read int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.writes...), r.read
}

// recording is net/http's ResponseWriter, whose Hijack hands over the connection under
// a recorder.
type recording struct {
	http.ResponseWriter
	rec **recorder
}

func (w recording) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	*w.rec = &recorder{Conn: nc}
	return *w.rec, brw, nil
}

// upgraded is the server's end of a connection taken over as the relay takes it.
type upgraded struct {
	ws  *websocket.Conn
	c   *Conn
	rec *recorder // nil unless served with record
}

// serve upgrades one request through Wrap (recording its writes if record), hands the
// server's end to handle and returns the client's end, reading without a size limit.
// handle runs on the server's goroutine; the test ends after it returns.
func serve(t *testing.T, record bool, handle func(u upgraded)) *websocket.Conn {
	t.Helper()
	done := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		var u upgraded
		if record {
			w = recording{w, &u.rec}
		}
		ws, err := websocket.Accept(Wrap(w, &u.c), r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if !assert.NoError(t, err) {
			return
		}
		u.ws = ws
		handle(u)
	}))
	t.Cleanup(hs.Close)
	c, _, err := websocket.Dial(context.Background(), hs.URL, nil)
	require.NoError(t, err)
	c.SetReadLimit(-1)
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server's handler did not return")
		}
		c.CloseNow()
	})
	return c
}

// frameEnds returns where each server frame in b ends, or an error if b is not a
// sequence of whole unmasked frames.
func frameEnds(b []byte) ([]int, error) {
	var ends []int
	for at := 0; at < len(b); {
		if len(b)-at < 2 {
			return ends, errors.New("a cut frame header")
		}
		if b[at+1]&0x80 != 0 {
			return ends, errors.New("a masked server frame")
		}
		n, head := int(b[at+1]&0x7f), 2
		switch n {
		case 126:
			n, head = int(binary.BigEndian.Uint16(b[at+2:])), 4
		case 127:
			n, head = int(binary.BigEndian.Uint64(b[at+2:])), 10
		}
		at += head + n
		if at > len(b) {
			return ends, errors.New("a cut frame")
		}
		ends = append(ends, at)
	}
	return ends, nil
}

func readAll(t *testing.T, c *websocket.Conn, n int) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got [][]byte
	for range n {
		_, b, err := c.Read(ctx)
		require.NoError(t, err)
		got = append(got, b)
	}
	return got
}

// Accept takes the connection over through Wrap's Hijack and keeps what it returns: the
// library reads through the Conn, and writes through a writer of WriteBuffer bytes into
// it, nothing around it (every byte on the wire went through the Conn's writes).
func TestTheLibraryReadsAndWritesThroughTheConnWrapHandsIt(t *testing.T) {
	big := bytes.Repeat([]byte{0x5A}, 3*WriteBuffer)
	c := serve(t, true, func(u upgraded) {
		require.NotNil(t, u.c, "Accept did not hijack through Wrap")
		require.Same(t, u.rec, u.c.Conn, "the Conn is the hijacked connection")
		_, got, err := u.ws.Read(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []byte("hello"), got)
		_, read := u.rec.taken()
		assert.Positive(t, read, "the library read the message through the Conn")
		require.NoError(t, u.ws.Write(context.Background(), websocket.MessageBinary, big))
		writes, _ := u.rec.taken()
		require.NotEmpty(t, writes)
		// The frame's header and the payload's start fill the writer, which flushes them
		// (the rest, larger than the writer, goes straight through).
		assert.Len(t, writes[0], WriteBuffer, "the library wrote through a writer of its own")
		var wire []byte
		for _, w := range writes {
			wire = append(wire, w...)
		}
		ends, err := frameEnds(wire)
		require.NoError(t, err, "the bytes written through the Conn are not whole frames")
		require.Len(t, ends, 1)
		assert.True(t, bytes.HasSuffix(wire, big), "the message is not what went through the Conn")
		u.ws.CloseNow()
	})
	require.NoError(t, c.Write(context.Background(), websocket.MessageBinary, []byte("hello")))
	assert.Equal(t, big, readAll(t, c, 1)[0])
}

// The library flushes at the end of each frame it finishes: each of its writes begins
// with a frame, and a frame that fits its writer (a message, a pong, the close frame)
// comes in one write. The close frame's write begins with CloseFrame, and the Conn then
// takes no direct write.
func TestTheLibraryWritesEachFrameThatFitsItsWriterInOneWriteOfItsOwn(t *testing.T) {
	sizes := []int{0, 10, 125, 126, 300, WriteBuffer - 4}
	pinged := make(chan struct{})
	c := serve(t, true, func(u upgraded) {
		ctx := u.ws.CloseRead(context.Background()) // reads, so pings are answered
		for _, n := range sizes {
			require.NoError(t, u.ws.Write(ctx, websocket.MessageBinary, bytes.Repeat([]byte{1}, n)))
		}
		<-pinged
		require.NoError(t, u.ws.Close(websocket.StatusNormalClosure, "bye"))
		u.c.Lock()
		assert.False(t, u.c.Idle(), "the Conn takes direct writes after the close frame")
		u.c.Unlock()

		writes, _ := u.rec.taken()
		var closes, frames int
		for i, w := range writes {
			ends, err := frameEnds(w)
			require.NoError(t, err, "write %d of %d is not whole frames: % x", i, len(writes), w[:min(len(w), 16)])
			frames += len(ends)
			if w[0] == CloseFrame {
				closes++
				assert.Len(t, ends, 1, "the close frame shares its write")
			}
		}
		assert.Equal(t, len(sizes)+1+1, frames, "the messages, the pong and the close frame")
		assert.Equal(t, 1, closes)
	})
	readCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan []byte, len(sizes))
	readErr := make(chan error, 1)
	go func() {
		for {
			_, b, err := c.Read(readCtx)
			if err != nil {
				readErr <- err
				return
			}
			got <- b
		}
	}()
	require.NoError(t, c.Ping(readCtx), "the pong")
	close(pinged)
	for _, n := range sizes {
		assert.Len(t, <-got, n)
	}
	assert.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(<-readErr))
}

// Messages framed by AppendBinary and written under the lock read on the library's
// client as messages the library wrote, between its own, at every length encoding.
func TestAMessageFramedByAppendBinaryReadsAsTheLibrarys(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 65535, 65536, 200_000}
	payload := func(i, n int) []byte { return bytes.Repeat([]byte{byte(i)}, n) }
	c := serve(t, false, func(u upgraded) {
		for i, n := range sizes {
			if i%2 == 0 {
				u.c.Lock()
				require.NoError(t, u.c.WriteLocked(AppendBinary(nil, payload(i, n))))
				u.c.Unlock()
			} else {
				require.NoError(t, u.ws.Write(context.Background(), websocket.MessageBinary, payload(i, n)))
			}
		}
		require.NoError(t, u.ws.Close(websocket.StatusNormalClosure, ""))
	})
	for i, b := range readAll(t, c, len(sizes)) {
		assert.Equal(t, payload(i, sizes[i]), b, "message %d", i)
	}
	c.CloseRead(context.Background())
}

// The library's writes wait for the lock: while the relay holds it (writing a frame of
// its own), nothing of the library's reaches the connection.
func TestHoldingTheLockHoldsTheLibrarysWrites(t *testing.T) {
	c := serve(t, false, func(u upgraded) {
		u.c.Lock()
		done := make(chan error, 1)
		go func() { done <- u.ws.Write(context.Background(), websocket.MessageBinary, []byte("late")) }()
		select {
		case err := <-done:
			t.Errorf("the library wrote while the lock was held (%v)", err)
		case <-time.After(50 * time.Millisecond):
		}
		require.NoError(t, u.c.WriteLocked(AppendBinary(nil, []byte("first"))))
		u.c.Unlock()
		require.NoError(t, <-done)
		require.NoError(t, u.ws.Close(websocket.StatusNormalClosure, ""))
	})
	got := readAll(t, c, 2)
	assert.Equal(t, []string{"first", "late"}, []string{string(got[0]), string(got[1])})
	c.CloseRead(context.Background())
}

// A client may send its first message in the same packet as its upgrade request: those
// bytes are in net/http's reader when Wrap takes the connection over, and the library
// reads them first.
func TestAMessageSentWithTheUpgradeRequestIsRead(t *testing.T) {
	got := make(chan []byte, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c *Conn
		ws, err := websocket.Accept(Wrap(w, &c), r, nil)
		if !assert.NoError(t, err) {
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, b, err := ws.Read(ctx)
		assert.NoError(t, err)
		got <- b
	}))
	defer hs.Close()

	msg := []byte("sent with the request")
	mask := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x82, 0x80 | byte(len(msg))}, mask[:]...)
	for i, b := range msg {
		frame = append(frame, b^mask[i%4])
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"+string(frame)) // one write: one packet on loopback
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	select {
	case b := <-got:
		assert.Equal(t, msg, b)
	case <-time.After(10 * time.Second):
		t.Fatal("the server read nothing")
	}
}
