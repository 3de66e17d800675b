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

func TestArrivalsAreIntervalsBetweenFramesAloneInTheirReads(t *testing.T) {
	t0 := time.Unix(1000, 0)
	period := 33 * time.Millisecond
	P := period.Microseconds()
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	var a arrivals
	type fr struct {
		read uint64
		at   time.Duration // after t0; <0: no stamp
	}
	var got []int64
	feed := func(frames ...fr) {
		for _, f := range frames {
			at := time.Time{}
			if f.at >= 0 {
				at = t0.Add(f.at)
			}
			if us, ok := a.frame(f.read, at, period); ok {
				got = append(got, us)
			}
		}
	}
	// Frames alone in their reads: each interval is known when the next frame comes.
	feed(fr{1, 0}, fr{2, ms(33)}, fr{3, ms(67.5)})
	assert.Equal(t, []int64{0}, got, "1→2 only: 2→3 waits for the frame after 3")
	feed(fr{4, ms(99)})
	assert.Equal(t, []int64{0, 1500}, got)

	// Two frames out of read 6: a sender's stall it caught up on, or a reader behind;
	// the intervals touching them count as a whole period (4→5 is settled first).
	got = nil
	feed(fr{5, ms(132)}, fr{6, ms(200)}, fr{6, ms(200)}, fr{7, ms(231)}, fr{8, ms(264)}, fr{9, ms(297)})
	assert.Equal(t, []int64{1500, 0, P, P, P, 0}, got, "3→4, 4→5, then 5→6a, 6a→6b, 6b→7 a period each, then 7→8")

	// Bytes after a frame in its read (an ack, the next frame's start) take its stamp.
	a.reset()
	got = nil
	feed(fr{10, 0})
	a.other(10)
	feed(fr{11, ms(40)}, fr{12, ms(66)})
	assert.Equal(t, []int64{P}, got, "10→11: 10's stamp was the ack's")
	a.other(99) // bytes of another read: nothing
	feed(fr{13, ms(99)})
	assert.Equal(t, []int64{P, 7000}, got, "11→12 are both their own")

	// A read without a stamp: no value for the intervals touching it, no penalty.
	a.reset()
	got = nil
	feed(fr{20, 0}, fr{21, -1}, fr{22, ms(66)}, fr{23, ms(99)}, fr{24, ms(132)})
	assert.Equal(t, []int64{0}, got, "22→23 only")

	// No stamps at all on this system (read 0): nothing, even though every frame "shares" read 0.
	a.reset()
	got = nil
	feed(fr{0, -1}, fr{0, -1}, fr{0, -1})
	assert.Empty(t, got)

	// After a reset nothing spans the break.
	a.reset()
	got = nil
	feed(fr{30, ms(500)}, fr{31, ms(533)})
	assert.Empty(t, got)
}

// dialStamped dials a one-connection listener through stampedDialer and returns both
// ends and the reading end's stamp.
func dialStamped(t *testing.T) (client net.Conn, server net.Conn, st *rxStamp) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	st = new(rxStamp)
	client, err = stampedDialer(st, nil)(context.Background(), "tcp", ln.Addr().String())
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
		_, at := st.read()
		return err == nil && !at.IsZero()
	}, 5*time.Second, time.Millisecond, "the kernel stamps received segments")
}

// A stamped connection reads as a net.Conn does: every byte in order, deadlines, EOF.
func TestAStampedConnectionReadsLikeAPlainOne(t *testing.T) {
	c, srv, st := dialStamped(t)
	if runtime.GOOS == "linux" {
		waitForStamps(t, c, srv, st)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: many reads
	go func() {
		_, _ = srv.Write(data)
		_ = srv.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	require.NoError(t, err, "io.ReadAll ends at EOF")
	assert.True(t, bytes.Equal(data, got), "%d bytes read of %d", len(got), len(data))
	if runtime.GOOS == "linux" {
		_, at := st.read()
		assert.False(t, at.IsZero())
	}

	c2, _, _ := dialStamped(t)
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = c2.Read(make([]byte, 8))
	assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "a read past its deadline: %v", err)
}
