package netem

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
)

// openNet opens an emulated network, or skips t (fails it under TICKRELAY_CROSS=require)
// where this process cannot.
func openNet(t *testing.T, o Options) *Net {
	t.Helper()
	n, err := Open(o)
	if errors.Is(err, ErrUnavailable) {
		crossarch.Missing(t, "the packet-level network emulator cannot run here: "+err.Error())
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.Close()) })
	return n
}

// udpDelivered sends count datagrams from the client's namespace to a socket in the
// server's and returns how many arrived.
func udpDelivered(t *testing.T, n *Net, count int) int {
	return len(udpArrived(t, n, count))
}

// udpArrived is udpDelivered's datagrams: the numbers of those that arrived, in order.
func udpArrived(t *testing.T, n *Net, count int) []int {
	t.Helper()
	var srv net.PacketConn
	require.NoError(t, n.Server.Do(func() (err error) {
		srv, err = net.ListenPacket("udp4", net.JoinHostPort(n.ServerIP.String(), "0"))
		return err
	}))
	defer srv.Close()
	c, err := n.Client.DialContext(nil)(context.Background(), "udp4", srv.LocalAddr().String())
	require.NoError(t, err)
	defer c.Close()
	got := make(chan []int)
	go func() {
		buf := make([]byte, 64)
		var seen []int
		for {
			_ = srv.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			k, _, err := srv.ReadFrom(buf)
			if err != nil {
				got <- seen
				return
			}
			i, _ := strconv.Atoi(string(buf[:k]))
			seen = append(seen, i)
		}
	}()
	for i := range count {
		_, err := c.Write([]byte(strconv.Itoa(i)))
		require.NoError(t, err)
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // keep the socket buffers from overflowing, which would be loss of ours
		}
	}
	return <-got
}

func TestLossDropsTheGivenShareOfPacketsOnTheNamespacesLoopback(t *testing.T) {
	n := openNet(t, Options{Loss: 0.3})
	assert.Same(t, n.Server, n.Client, "without a delay, one namespace")
	got := udpDelivered(t, n, 2000)
	assert.InDelta(t, 1400, got, 150, "about 70%% of 2000 datagrams arrive at 30%% loss")

	clean := openNet(t, Options{})
	assert.Equal(t, 2000, udpDelivered(t, clean, 2000), "no loss, nothing lost")
}

func TestABurstDropsEverythingForItsFade(t *testing.T) {
	// A 1% pick rate over 2000 datagrams makes about 20 picks, and none at all with a
	// chance of e^-20: the kernel draws the picks, so a rarer rate made this test fail
	// whenever no packet happened to be picked (at 0.2%, e^-4, about one run in fifty).
	// Each pick drops its flow for 40 ms, in which the sender (50 datagrams, then 1 ms
	// of sleep) puts far more than ten, however slowly a busy machine runs it.
	n := openNet(t, Options{Loss: 0.01, Burst: 40 * time.Millisecond})
	got := udpArrived(t, n, 2000)
	assert.Less(t, len(got), 2000-100, "fades drop runs of packets, far more than 1%% (20) alone would")
	// The runs before the first datagram that arrived and after the last count too: the
	// whole send may take little more than one fade, so a fade may run to the end.
	longest, prev := 0, -1
	for _, i := range append(got, 2000) {
		longest = max(longest, i-prev-1)
		prev = i
	}
	assert.GreaterOrEqual(t, longest, 10, "a fade of 40 ms drops a run of datagrams; 1%% loss alone makes runs of ten with a chance of 1e-20")
}

func TestTheLinkDelaysEachDirectionAndReachesNothingElse(t *testing.T) {
	const delay = 15 * time.Millisecond
	n := openNet(t, Options{Delay: delay, Jitter: 2 * time.Millisecond})
	require.NotSame(t, n.Server, n.Client)
	ln, err := n.Server.Listen("tcp4", net.JoinHostPort(n.ServerIP.String(), "0"))
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
	c, err := n.Client.DialContext(nil)(context.Background(), "tcp4", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, 1)
	var best time.Duration = time.Hour
	for range 5 {
		t0 := time.Now()
		_, err := c.Write([]byte{7})
		require.NoError(t, err)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		best = min(best, time.Since(t0))
	}
	assert.GreaterOrEqual(t, best, 2*delay, "a round trip waits the delay both ways")
	tc, err := n.Counters()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, tc.OutSegs, int64(10), "both namespaces' segments counted: the handshake and five echoes each way")
	moved, overflow, _ := n.Forwarded()
	assert.Positive(t, moved)
	assert.Zero(t, overflow)

	// Nothing but the link and loopback in either namespace: no way out.
	for _, ns := range []*Namespace{n.Server, n.Client} {
		var names []string
		require.NoError(t, ns.Do(func() error {
			ifs, err := net.Interfaces()
			for _, i := range ifs {
				names = append(names, i.Name)
			}
			return err
		}))
		assert.ElementsMatch(t, []string{"lo", tunName}, names, "the %s namespace's interfaces", ns)
	}
}
