package netem

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheDelayProxyHoldsBytesInEachDirectionAndKeepsTheirOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { // echo
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	const delay = 20 * time.Millisecond
	px, err := Start(ln.Addr().String(), delay, 5*time.Millisecond)
	require.NoError(t, err)
	defer px.Close()
	c, err := net.Dial("tcp", px.Addr())
	require.NoError(t, err)
	defer c.Close()

	start := time.Now()
	var want []byte
	for i := range 50 {
		b := []byte{byte(i), byte(i * 7)}
		want = append(want, b...)
		_, err := c.Write(b)
		require.NoError(t, err)
	}
	got := make([]byte, len(want))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 2*delay, "a round trip through the proxy waits its delay both ways")
	assert.Equal(t, want, got, "bytes arrive whole and in order despite the jitter")
}
