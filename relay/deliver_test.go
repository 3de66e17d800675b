//go:build unix

package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay/internal/wsconn"
)

// The match actor writes a frame itself when the connection is idle (deliver). When the
// socket takes only part of it, the rest must go out next, before any other message and
// before any write of the library (here a message it frames itself), and what was queued
// behind it in order: the peer reads every message whole, once, in the order delivered.
func TestDeliveredFramesArriveWholeAndInOrderWhenTheSocketTakesOnlyPartOfOne(t *testing.T) {
	t.Parallel()
	s, c := liveSession(t)
	require.True(t, s.raw.NonBlocking(), "a TCP connection takes non-blocking writes")

	// Messages of 3 KiB, each its index then filler: until the socket refuses one, the
	// actor writes them itself; after that they queue behind the rest of the cut one.
	const size = 3 << 10
	message := func(i int) []byte {
		b := bytes.Repeat([]byte{byte(i)}, size)
		binary.BigEndian.PutUint32(b, uint32(i))
		return b
	}
	direct, sent := 0, 0
	for sent < 200 && (s.pending.Load() == 0 || sent < direct+8) {
		m := oneOff(message(sent))
		m.frameWS()
		if s.pending.Load() == 0 {
			direct++
		}
		require.True(t, s.deliver(m), "message %d", sent)
		m.release()
		sent++
	}
	require.Positive(t, s.pending.Load(), "the socket never refused a write: the test did not reach the cut frame")
	// The library writes a message of its own now, from another goroutine: it must wait
	// for the cut frame's rest and land between whole messages.
	marker := bytes.Repeat([]byte{0xEE}, size)
	binary.BigEndian.PutUint32(marker, 0xEEEEEEEE)
	libDone := make(chan error, 1)
	go func() { libDone <- s.conn.Write(context.Background(), websocket.MessageBinary, marker) }()

	markerSeen := false
	for want := 0; want < sent || !markerSeen; {
		got, err := readMessage(t, c)
		require.NoError(t, err, "reading message %d of %d", want, sent)
		if binary.BigEndian.Uint32(got) == 0xEEEEEEEE {
			require.False(t, markerSeen, "the library's message arrived twice")
			assert.Equal(t, marker, got, "the library's message arrived cut or mixed")
			markerSeen = true
			continue
		}
		require.Equal(t, message(want), got, "message %d arrived cut, mixed or out of order", want)
		want++
	}
	require.NoError(t, <-libDone)
	assert.Positive(t, direct, "some messages were written by the actor itself")
	assert.Eventually(t, func() bool { return s.pending.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
	t.Logf("%d messages: %d written by the actor, the rest queued after a cut one", sent, direct)
}

// sessionServer serves one WebSocket upgrade as the relay does (small buffers, the raw
// connection, the session's writer running, its kernel send buffer small) and returns the
// address to dial and what gives the session once a client has connected.
func sessionServer(t *testing.T) (addr string, accepted func() *session) {
	t.Helper()
	srv, err := New(Options{TokenSecret: bytes.Repeat([]byte{7}, 32)}, nil)
	require.NoError(t, err)
	got := make(chan *session, 1)
	hold := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var raw *wsconn.Conn
		conn, err := websocket.Accept(wsconn.Wrap(w, &raw), r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		_ = raw.Conn.(*net.TCPConn).SetWriteBuffer(4 << 10)
		s := newSession(srv, conn, r.RemoteAddr)
		s.raw, s.claims = raw, Claims{Role: RolePlayer, Slot: 1}
		go s.writeLoop()
		got <- s
		<-hold
	}))
	t.Cleanup(func() { close(hold); hs.Close() })
	return strings.TrimPrefix(hs.URL, "http://"), func() *session {
		s := <-got
		t.Cleanup(s.stop)
		return s
	}
}

// liveSession is a session behind a real WebSocket upgrade and the client's end, which
// reads only when the test says.
func liveSession(t *testing.T) (*session, *websocket.Conn) {
	t.Helper()
	addr, accepted := sessionServer(t)
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr, nil)
	require.NoError(t, err)
	c.SetReadLimit(-1)
	return accepted(), c
}

// bigFrame is a message larger than the kernel's buffers: a direct write of it is cut.
func bigFrame() *message {
	m := oneOff(bytes.Repeat([]byte{0xAB}, 1<<20))
	m.frameWS()
	return m
}

// deliverParked starts deliver(m) on its own goroutine and returns once it holds the
// connection's lock, parked on the held acks (the test holds ackMu): past its checks,
// before its write. release lets it go on; the result arrives on the channel.
//
// Parked means its goroutine's stack is in heldAcks, called from deliver: a held lock
// alone is not enough, since deliver checks whether the session was kicked after it
// takes the lock (a kick in between made it queue instead, 1 run in many under load).
func deliverParked(t *testing.T, s *session, m *message) (release func(), done <-chan bool) {
	t.Helper()
	s.ackMu.Lock()
	res := make(chan bool, 1)
	go func() { res <- s.deliver(m) }()
	buf := make([]byte, 1<<20)
	require.Eventually(t, func() bool {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "relay.(*session).heldAcks") && strings.Contains(g, "relay.(*session).deliver") &&
				strings.Contains(g, "sync.(*Mutex).Lock") {
				return true
			}
		}
		return false
	}, 5*time.Second, 100*time.Microsecond)
	return s.ackMu.Unlock, res
}

// readMessage reads the client's next message, or its close.
func readMessage(t *testing.T, c *websocket.Conn) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	return b, err
}

// A message the reader queues (a pong) while the actor writes a frame the socket takes
// only part of comes after the whole frame, and the writer is not left waiting.
func TestAPongQueuedWhileTheActorWritesACutFrameFollowsTheWholeFrame(t *testing.T) {
	t.Parallel()
	s, c := liveSession(t)
	release, done := deliverParked(t, s, bigFrame())
	s.sendBytes([]byte{1, 2, 3}) // what the reader does for a Ping
	release()
	require.True(t, <-done)
	b, err := readMessage(t, c)
	require.NoError(t, err)
	assert.Len(t, b, 1<<20, "the frame arrived whole")
	b, err = readMessage(t, c)
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, b, "then the pong")
	s.stop()
	select {
	case <-s.writerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not end after stop")
	}
}

// A kick that lands while the actor writes a frame the socket takes only part of: the
// client gets the whole frame, then the kick's close.
func TestAKickWhileTheActorWritesACutFrameClosesAfterTheWholeFrame(t *testing.T) {
	t.Parallel()
	s, c := liveSession(t)
	release, done := deliverParked(t, s, bigFrame())
	s.kick(CloseTooSlow, "too slow")
	release()
	require.True(t, <-done)
	b, err := readMessage(t, c)
	require.NoError(t, err)
	assert.Len(t, b, 1<<20, "the frame arrived whole")
	_, err = readMessage(t, c)
	assert.Equal(t, CloseTooSlow, websocket.CloseStatus(err), "then the close: %v", err)
}

// When the writer ends on an error that is not the socket's (a catch-up's file cannot be
// read), nothing more is written to the client: not a frame after the gap, and no write
// of the library hangs.
func TestNothingIsWrittenDirectlyAfterTheWriterFailed(t *testing.T) {
	t.Parallel()
	s, c := liveSession(t)
	f, err := os.CreateTemp(t.TempDir(), "stream")
	require.NoError(t, err)
	require.NoError(t, f.Close()) // its ReadAt fails
	m := oneOff(nil)
	m.src, m.from, m.to, m.stream = newFileRef(f), 0, 100, true
	require.True(t, s.push(m))
	m.release()
	select {
	case <-s.writerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not end on the failed read")
	}
	frame := oneOff([]byte{9})
	frame.frameWS()
	s.deliver(frame)
	frame.release()
	b, err := readMessage(t, c)
	assert.Error(t, err, "the client got %d bytes after the writer failed", len(b))
	pong := make(chan error, 1)
	go func() { pong <- s.conn.Write(context.Background(), websocket.MessageBinary, []byte{1}) }()
	select {
	case <-pong:
	case <-time.After(5 * time.Second):
		t.Fatal("a write of the library hung after the writer failed")
	}
}

// rawClient is a session behind a real upgrade and a client that speaks raw TCP, to see
// every frame the relay writes, close frames included.
func rawClient(t *testing.T) (*session, net.Conn, *bufio.Reader) {
	t.Helper()
	addr, accepted := sessionServer(t)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if line == "\r\n" {
			break
		}
	}
	return accepted(), c, br
}

// readFrame reads one small server frame: its first byte and its payload.
func readFrame(br *bufio.Reader) (byte, []byte, error) {
	h := make([]byte, 2)
	if _, err := io.ReadFull(br, h); err != nil {
		return 0, nil, err
	}
	p := make([]byte, h[1]&0x7f) // the frames here are all under 126 bytes
	_, err := io.ReadFull(br, p)
	return h[0], p, err
}

// At the end of a match the writer sends the close frame and waits for the client's; a
// pong the reader sends meanwhile must not follow the close frame (RFC 6455 5.5.1).
func TestNothingFollowsTheCloseFrameAtTheEndOfAMatch(t *testing.T) {
	t.Parallel()
	s, c, br := rawClient(t)
	end := oneOff([]byte{5})
	end.closeAfter = true
	require.True(t, s.enqueue(end))
	end.release()
	_, p, err := readFrame(br)
	require.NoError(t, err)
	require.Equal(t, []byte{5}, p)
	op, _, err := readFrame(br)
	require.NoError(t, err)
	require.Equal(t, byte(wsconn.CloseFrame), op, "the close frame")
	s.sendBytes([]byte{1, 2, 3}) // the reader answering a Ping that arrived just before
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Second)))
	op, p, err = readFrame(br)
	assert.Error(t, err, "after the close frame the client got frame %#x %v", op, p)
}

// An ack is held for the next frame only when nothing is queued: queued behind an
// earlier ack, it would otherwise overtake it (held acks go out first).
func TestAnAckIsHeldOnlyWhenNothingIsQueued(t *testing.T) {
	t.Parallel()
	srv, err := New(Options{TokenSecret: bytes.Repeat([]byte{7}, 32)}, nil)
	require.NoError(t, err)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := &session{srv: srv, raw: wsconn.New(a), send: make(chan *message, 8), kicked: make(chan struct{})}
	ack := func() *message {
		m := oneOff([]byte{1})
		m.frameWS()
		return m
	}
	first := ack()
	require.True(t, s.push(first))
	assert.False(t, s.holdAck(ack()), "an ack behind a queued one queues too")
	<-s.send
	s.pending.Add(-1)
	first.release()
	assert.True(t, s.holdAck(ack()), "with nothing queued the ack waits for the next frame")
}
