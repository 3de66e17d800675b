package loadtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJitterFromStampsIsTheIntervalsDistanceFromThePeriod(t *testing.T) {
	t0 := time.Unix(1000, 0)
	period := 33 * time.Millisecond
	var last time.Time
	_, ok := jitterFrom(&last, t0, period)
	assert.False(t, ok, "the first stamp has no interval")
	_, ok = jitterFrom(&last, time.Time{}, period)
	assert.False(t, ok, "no stamp, no value")
	_, ok = jitterFrom(&last, t0.Add(2*period), period)
	assert.False(t, ok, "an unstamped frame breaks the chain: no interval spans it")
	for _, c := range []struct {
		after time.Duration
		us    int64
	}{{period, 0}, {period + 1500*time.Microsecond, 1500}, {period - 700*time.Microsecond, 700}, {0, 33000}} {
		prev := last
		us, ok := jitterFrom(&last, prev.Add(c.after), period)
		require.True(t, ok)
		assert.Equal(t, c.us, us, "%v after the previous stamp", c.after)
	}
}

// dialStamped dials a one-connection listener through stampedDialer and returns both
// ends and the reading end's stamp.
func dialStamped(t *testing.T) (client net.Conn, server net.Conn, st *rxStamp) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = stampedDialer(func(s *rxStamp) { st = s })(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	server, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server, st
}

// waitForStamps sends bytes over c until the kernel stamps them: it turns stamping on a
// moment after the first socket asks for it.
func waitForStamps(t *testing.T, c, srv net.Conn, st *rxStamp) {
	t.Helper()
	buf := make([]byte, 16)
	require.Eventually(t, func() bool {
		if _, err := srv.Write([]byte("warm-up")); err != nil {
			return false
		}
		_, err := c.Read(buf)
		return err == nil && !st.time().IsZero()
	}, 5*time.Second, time.Millisecond, "the kernel stamps received segments")
}

// The stamp is when the bytes reached the socket, not when the reader got to them.
func TestAStampedReadIsStampedWithTheArrivalNotTheRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("receive stamps are read on Linux only")
	}
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
		at := st.time()
		assert.False(t, at.Before(before.Add(-time.Millisecond)), "read %d: stamped %v before the write began", i, before.Sub(at))
		assert.Less(t, at.Sub(wrote), 10*time.Millisecond, "read %d: stamped %v after the write returned", i, at.Sub(wrote))
		assert.GreaterOrEqual(t, read.Sub(at), 20*time.Millisecond, "read %d: stamped at the read, not at the arrival", i)
		stamps = append(stamps, at)
	}
	assert.GreaterOrEqual(t, stamps[1].Sub(stamps[0]), 30*time.Millisecond, "each read has its own stamp")
}

// A stamped connection reads as a net.Conn does: every byte in order, deadlines, EOF.
func TestAStampedConnectionReadsLikeAPlainOne(t *testing.T) {
	c, srv, st := dialStamped(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: many reads
	go func() {
		_, _ = srv.Write(data)
		_ = srv.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	require.NoError(t, err, "io.ReadAll ends at EOF")
	assert.True(t, bytes.Equal(data, got), "%d bytes read of %d", len(got), len(data))
	if runtime.GOOS == "linux" {
		assert.False(t, st.time().IsZero())
	}

	c2, _, _ := dialStamped(t)
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = c2.Read(make([]byte, 8))
	assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "a read past its deadline: %v", err)
	var nilStamp *rxStamp
	assert.True(t, nilStamp.time().IsZero(), "no stamp reads as zero")
}

func TestAStampedReadAllocatesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("receive stamps are read on Linux only")
	}
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
