//go:build unix

package wsconn

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpPair is a connected pair of loopback TCP connections, the first under a Conn.
func tcpPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	peer, ok := <-accepted
	require.True(t, ok, "accept failed")
	r := New(c)
	require.True(t, r.NonBlocking(), "a TCP connection takes raw reads and writes")
	t.Cleanup(func() { r.Close(); peer.Close() })
	return r, peer
}

// The raw reads behave as the connection's own: they wait for bytes, hand over what
// came, end in io.EOF when the peer closes, and honour the read deadline and Close.
func TestRawReadsAreTheConnectionsReads(t *testing.T) {
	r, peer := tcpPair(t)
	go func() {
		time.Sleep(20 * time.Millisecond) // the read waits for it
		_, _ = peer.Write([]byte("hello"))
		_ = peer.Close()
	}()
	got, err := io.ReadAll(r)
	require.NoError(t, err, "ReadAll stops at io.EOF")
	assert.Equal(t, "hello", string(got))

	r, _ = tcpPair(t)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = r.Read(make([]byte, 8))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, r.SetReadDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() { _, err := r.Read(make([]byte, 8)); done <- err }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, r.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting read")
	}
}

// A raw write larger than the socket takes at once waits for the peer to read, and
// every byte arrives in order.
func TestARawWriteWaitsUntilThePeerTakesEveryByte(t *testing.T) {
	r, peer := tcpPair(t)
	big := make([]byte, 16<<20) // far above loopback's socket buffers
	for i := range big {
		big[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // the writer fills the socket and waits
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	r.Lock()
	err := r.WriteLocked(big)
	r.Unlock()
	require.NoError(t, err)
	select {
	case b := <-got:
		require.True(t, bytes.Equal(big, b), "the peer read %d bytes, not the ones written", len(b))
	case <-time.After(10 * time.Second):
		t.Fatal("the peer never got every byte")
	}

	require.NoError(t, peer.Close())
	// Writing to a closed peer fails (at once or after the reset) and never hangs.
	r.Lock()
	defer r.Unlock()
	require.NoError(t, r.SetWriteDeadline(time.Now().Add(5*time.Second)))
	var werr error
	for range 100 {
		if werr = r.WriteLocked(big[:64<<10]); werr != nil {
			break
		}
	}
	require.Error(t, werr)
	require.NotErrorIs(t, werr, os.ErrDeadlineExceeded, "the failed write should fail, not time out")
}

// The raw calls allocate nothing: they run for every frame of every connection.
func TestRawCallsAllocateNothing(t *testing.T) {
	r, peer := tcpPair(t)
	msg := []byte("a frame's bytes")
	r.Lock()
	allocs := testing.AllocsPerRun(200, func() {
		if cut, err := r.TryWriteLocked(msg); err != nil || cut {
			t.Fatalf("TryWriteLocked: cut %v, %v", cut, err)
		}
		if err := r.WriteLocked(msg); err != nil {
			t.Fatal(err)
		}
	})
	r.Unlock()
	assert.Zero(t, allocs, "allocations per frame written")

	buf := make([]byte, 2*len(msg))
	go func() { _, _ = peer.Write(bytes.Repeat(msg, 1000)) }()
	allocs = testing.AllocsPerRun(200, func() {
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per read")
}

// A non-blocking write the socket takes only part of keeps its rest: the Conn is not
// Idle, and the next write, the library's or the relay's, finishes the frame first.
func TestTheRestOfACutWriteGoesFirst(t *testing.T) {
	r, peer := tcpPair(t)
	big := AppendBinary(nil, bytes.Repeat([]byte{0xAB}, 16<<20))
	r.Lock()
	cut, err := r.TryWriteLocked(big)
	require.NoError(t, err)
	require.True(t, cut, "loopback took 16 MiB in one non-blocking write")
	assert.False(t, r.Idle(), "Idle with a cut frame's rest")
	r.Unlock()

	small := AppendBinary(nil, []byte("next"))
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big)+len(small))))
		got <- b
	}()
	_, err = r.Write(small) // the library's write
	require.NoError(t, err)
	r.Lock()
	assert.True(t, r.Idle(), "the rest was written")
	r.Unlock()
	select {
	case b := <-got:
		require.True(t, bytes.Equal(append(big, small...), b), "the peer read %d bytes, not the frame then the next", len(b))
	case <-time.After(10 * time.Second):
		t.Fatal("the peer never got every byte")
	}
}
