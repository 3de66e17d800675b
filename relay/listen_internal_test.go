package relay

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
)

func TestTheRelayTunesEverySocketItAccepts(t *testing.T) {
	t.Parallel()
	opts := tcptune.Options{RTOMin: 40 * time.Millisecond}
	if a, err := tcptune.Probe(opts); err != nil || a.RTOMin == 0 {
		t.Skipf("this kernel takes no per-socket retransmission floor: %v %v", a, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tl := tunedListener{ln, opts}
	defer tl.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := tl.Accept()
	require.NoError(t, err)
	defer s.Close()
	got, err := tcptune.Read(s)
	require.NoError(t, err)
	assert.Equal(t, 40*time.Millisecond, got.RTOMin, "the accepted socket has the floor asked for")
	assert.True(t, got.ThinLinear)
	// The dialling side, untouched, keeps the kernel's.
	mine, err := tcptune.Read(c)
	require.NoError(t, err)
	assert.NotEqual(t, 40*time.Millisecond, mine.RTOMin)
	assert.False(t, mine.ThinLinear)
}
