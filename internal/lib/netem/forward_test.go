package netem

import (
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packets is a packet device in memory: each Read is one packet written to it.
type packets struct {
	c    chan []byte
	mu   sync.Mutex
	got  [][]byte
	when []time.Time
}

func newPackets() *packets { return &packets{c: make(chan []byte, 1024)} }

func (p *packets) Read(b []byte) (int, error) {
	pk, ok := <-p.c
	if !ok {
		return 0, io.EOF
	}
	return copy(b, pk), nil
}

func (p *packets) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, append([]byte(nil), b...))
	p.when = append(p.when, time.Now())
	return len(b), nil
}

func (p *packets) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

func runDirection(t *testing.T, sh shaper, n int) (*packets, time.Time) {
	t.Helper()
	src, dst := newPackets(), newPackets()
	d := newDirection(src, dst, sh)
	t0 := time.Now()
	for i := range n {
		src.c <- []byte{byte(i)}
	}
	require.Eventually(t, func() bool { return dst.count() == n }, 5*time.Second, time.Millisecond)
	close(src.c)
	d.stop()
	return dst, t0
}

func TestTheForwarderHoldsEachPacketItsDelayAndKeepsTheirOrder(t *testing.T) {
	const delay = 10 * time.Millisecond
	dst, t0 := runDirection(t, shaper{delay: delay, jitter: 5 * time.Millisecond, rng: rand.New(rand.NewPCG(1, 2))}, 200)
	for i, b := range dst.got {
		require.Equal(t, byte(i), b[0], "packet %d left out of order", i)
	}
	assert.GreaterOrEqual(t, dst.when[0].Sub(t0), delay, "no packet leaves before its delay")
}

func TestReorderingLetsSomePacketsOvertake(t *testing.T) {
	dst, _ := runDirection(t, shaper{jitter: 20 * time.Millisecond, reorder: 0.5, rng: rand.New(rand.NewPCG(3, 4))}, 200)
	overtook := 0
	for i := 1; i < len(dst.got); i++ {
		if dst.got[i][0] < dst.got[i-1][0] {
			overtook++
		}
	}
	assert.Positive(t, overtook, "with half the packets free of the order and 20 ms of jitter, some overtake")
}

func TestOptionsOutOfRangeAreRefusedWithTheRange(t *testing.T) {
	for _, o := range []Options{{Loss: 1}, {Loss: -0.1}, {Delay: -1}, {Burst: 10 * time.Microsecond, Loss: 0.1}, {Reorder: 0.5}} {
		err := o.Validate()
		assert.ErrorIs(t, err, ErrOptions, "%+v", o)
	}
	assert.NoError(t, Options{Loss: 0.02, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond}.Validate())
	assert.Equal(t, "2% loss each way, 50ms +0..10ms each way (RTT 100ms)", Options{Loss: 0.02, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond}.String())
}
