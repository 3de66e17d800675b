//go:build linux

package client

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
)

func TestTheClientDialsTunedSocketsUnlessToldToLeaveTheKernels(t *testing.T) {
	want, err := tcptune.Probe(tcptune.Options{})
	require.NoError(t, err)
	if want.RTOMin == 0 {
		t.Skipf("this kernel takes no per-socket retransmission floor: %s", want)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dial := func(o Options) tcptune.Applied {
		hc := dialOptions(&o).HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		tr := hc.Transport
		if tr == nil {
			tr = http.DefaultTransport
		}
		c, err := tr.(*http.Transport).DialContext(context.Background(), "tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		a, err := tcptune.Read(c)
		require.NoError(t, err)
		return a
	}
	tuned := dial(Options{})
	assert.Equal(t, want.RTOMin, tuned.RTOMin)
	assert.True(t, tuned.ThinLinear)
	plain := dial(Options{KernelTCP: true})
	assert.NotEqual(t, want.RTOMin, plain.RTOMin)
	assert.False(t, plain.ThinLinear)
}
