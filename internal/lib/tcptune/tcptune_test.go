//go:build linux

package tcptune

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcceptedAndDialledSocketsTakeTheOptionsOrSayWhyNot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the options are Linux's")
	}
	want, err := Probe(Options{})
	require.NoError(t, err)
	if len(want.Refused) > 0 {
		t.Logf("this kernel refuses some: %s", want)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	d := net.Dialer{Control: Control(Options{})}
	c, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	got := Apply(s, Options{RTOMin: 40 * time.Millisecond, DelackMax: -1, NoThinLinear: true})
	if want.RTOMin > 0 {
		assert.Equal(t, 40*time.Millisecond, got.RTOMin, "the accepted socket's floor is the one asked")
		dialled, err := Read(c)
		require.NoError(t, err)
		assert.Equal(t, DefaultRTOMin, dialled.RTOMin, "the dialled socket has the default floor")
		assert.True(t, dialled.ThinLinear)
	}
	assert.Zero(t, got.DelackMax, "a negative option leaves the kernel's")
	assert.False(t, got.ThinLinear)
	assert.Equal(t, "rto_min 40ms", Applied{RTOMin: 40 * time.Millisecond}.String())
}

func TestAnOptionTheKernelRefusesIsReportedAndTheRestStillApply(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the options are Linux's")
	}
	a, err := Probe(Options{RTOMin: time.Hour}) // far above any kernel's range
	require.NoError(t, err)
	assert.Zero(t, a.RTOMin)
	require.Len(t, a.Refused, 1)
	assert.Contains(t, a.Refused[0], "TCP_RTO_MIN_US")
	assert.True(t, a.ThinLinear, "the other options still apply")
}
