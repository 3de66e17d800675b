package loadtest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stamp is when the bytes reached the socket, not when the reader got to them.
func TestAStampedReadIsStampedWithTheArrivalNotTheRead(t *testing.T) {
	c, srv, st := dialStamped(t)
	_, isStamped := c.(*stampConn)
	require.True(t, isStamped, "the kernel agreed to stamp the connection")
	waitForStamps(t, c, srv, st)

	var stamps []time.Time
	buf := make([]byte, 16)
	for i, msg := range []string{"first", "second"} {
		before := time.Now()
		_, err := srv.Write([]byte(msg))
		require.NoError(t, err)
		wrote := time.Now()
		time.Sleep(30 * time.Millisecond) // the bytes wait in the socket
		read := time.Now()
		n, err := c.Read(buf)
		require.NoError(t, err)
		assert.Equal(t, msg, string(buf[:n]))
		_, at := st.read()
		assert.False(t, at.Before(before.Add(-time.Millisecond)), "read %d: stamped %v before the write began", i, before.Sub(at))
		assert.Less(t, at.Sub(wrote), 10*time.Millisecond, "read %d: stamped %v after the write returned", i, at.Sub(wrote))
		assert.GreaterOrEqual(t, read.Sub(at), 20*time.Millisecond, "read %d: stamped at the read, not at the arrival", i)
		stamps = append(stamps, at)
	}
	assert.GreaterOrEqual(t, stamps[1].Sub(stamps[0]), 20*time.Millisecond, "each read has its own stamp")
}

func TestAStampedReadAllocatesNothing(t *testing.T) {
	c, srv, st := dialStamped(t)
	waitForStamps(t, c, srv, st)
	msg, buf := []byte("frame"), make([]byte, 16)
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = srv.Write(msg)
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// A swarm connection's stamp says which of its dialed connections read last, so that a
// reconnect is seen at the first frame of the new connection.
func TestAStampNamesTheConnectionThatReadLast(t *testing.T) {
	c1, srv1, st := dialStamped(t)
	waitForStamps(t, c1, srv1, st)
	assert.Equal(t, uint64(1), st.conn.Load())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c2, err := stampedDialer(st, nil)(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c2.Close()
	srv2, err := ln.Accept()
	require.NoError(t, err)
	defer srv2.Close()
	assert.Equal(t, uint64(1), st.conn.Load(), "dialing is not reading")
	_, err = srv2.Write([]byte("x"))
	require.NoError(t, err)
	_, err = c2.Read(make([]byte, 4))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.conn.Load())
}
