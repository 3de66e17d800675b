//go:build unix

package relay

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The match actor writes a frame itself when the connection is idle (deliver). When the
// socket takes only part of it, the rest must go out next, before any other message and
// before any write of the library (a pong, the close frame), and what was queued behind
// it in order: the peer reads every message whole, once, in the order delivered.
func TestDeliveredFramesArriveWholeAndInOrderWhenTheSocketTakesOnlyPartOfOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer peer.Close()
	require.NoError(t, peer.(*net.TCPConn).SetReadBuffer(4<<10))
	c, err := ln.Accept()
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).SetWriteBuffer(4<<10)) // small kernel buffers: it fills at once

	srv, err := New(Options{TokenSecret: bytes.Repeat([]byte{7}, 32)}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &session{
		srv: srv, raw: newRawConn(c), ctx: ctx, cancel: cancel,
		send:   make(chan *message, srv.opts.SendQueue+queueReserve),
		kicked: make(chan struct{}), writerDone: make(chan struct{}),
		claims: Claims{Role: RolePlayer, Slot: 1},
	}
	require.NotNil(t, s.raw.sc, "a TCP connection takes non-blocking writes")
	go s.writeLoop()

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
		m := oneOff(nil)
		m.framed = message(sent)
		if s.pending.Load() == 0 {
			direct++
		}
		require.True(t, s.deliver(m), "message %d", sent)
		m.release()
		sent++
	}
	require.Positive(t, s.pending.Load(), "the socket never refused a write: the test did not reach the partial path")
	// The library writes a control frame now, from another goroutine: it must wait for
	// the cut message's rest and land between whole messages.
	marker := bytes.Repeat([]byte{0xEE}, size)
	binary.BigEndian.PutUint32(marker, 0xEEEEEEEE)
	libDone := make(chan error, 1)
	go func() { _, err := (libWriter{s.raw}).Write(marker); libDone <- err }()

	got := make([]byte, size)
	markerSeen := false
	require.NoError(t, peer.SetReadDeadline(time.Now().Add(20*time.Second)))
	for want := 0; want < sent; {
		_, err := io.ReadFull(peer, got)
		require.NoError(t, err, "reading message %d of %d", want, sent)
		if binary.BigEndian.Uint32(got) == 0xEEEEEEEE {
			require.False(t, markerSeen, "the library's write arrived twice")
			assert.Equal(t, marker, got, "the library's write arrived cut or mixed")
			markerSeen = true
			continue
		}
		require.Equal(t, message(want), got, "message %d arrived cut, mixed or out of order", want)
		want++
	}
	if !markerSeen {
		_, err := io.ReadFull(peer, got)
		require.NoError(t, err)
		assert.Equal(t, marker, got)
	}
	require.NoError(t, <-libDone)
	assert.Positive(t, direct, "some messages were written by the actor itself")
	assert.Eventually(t, func() bool { return s.pending.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
	t.Logf("%d messages: %d written by the actor, the rest queued after a cut one", sent, direct)

	// The writer ends on a write error (a closed connection), as it does when the peer goes.
	require.NoError(t, c.Close())
	last := oneOff(nil)
	last.framed = message(sent)
	require.True(t, s.push(last))
	last.release()
	select {
	case <-s.writerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not end after its connection closed")
	}
}
