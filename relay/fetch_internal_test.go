package relay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The ring keeps the window's last records in tick order, starts again after a gap,
// and says when a tick is older than it holds.
func TestRecentFramesKeepTheWindowAndRefuseOlderTicks(t *testing.T) {
	t.Parallel()
	r := newRecentFrames(2) // 2 Hz: FetchWindow*2 records
	n := uint64(FetchWindow * 2)
	for tick := uint64(10); tick < 10+n+3; tick++ {
		r.add(tick, []byte{byte(tick)})
	}
	last := 10 + n + 2
	b, ok := r.appendFrom(nil, last-1)
	assert.True(t, ok)
	assert.Equal(t, []byte{byte(last - 1), byte(last)}, b)
	b, ok = r.appendFrom(nil, last+1-n)
	assert.True(t, ok)
	assert.Len(t, b, int(n), "the whole window")
	_, ok = r.appendFrom(nil, last-n)
	assert.False(t, ok, "one tick older than the window")
	b, ok = r.appendFrom([]byte{7}, last+5)
	assert.True(t, ok)
	assert.Equal(t, []byte{7}, b, "a tick not sealed yet: nothing")

	r.add(500, []byte{1}) // a gap: a resumed match's clock
	_, ok = r.appendFrom(nil, last)
	assert.False(t, ok)
	b, ok = r.appendFrom(nil, 500)
	assert.True(t, ok)
	assert.Equal(t, []byte{1}, b)
}

func TestAWarmRingAllocatesNothing(t *testing.T) {
	r := newRecentFrames(30)
	rec := make([]byte, 40)
	tick := uint64(0)
	for range FetchWindow * 30 {
		r.add(tick, rec)
		tick++
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { r.add(tick, rec); tick++ }))
}
