package loadtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPaceSendsItsRateOverTheTicksAndAtMostFourATick(t *testing.T) {
	p := newPace(0.2, 3, 2)
	sent, most := 0, 0
	for range 300 {
		n := p.tick()
		sent += n
		most = max(most, n)
	}
	assert.InDelta(t, 60, sent, 1, "0.2 a tick for 300 ticks")
	assert.Equal(t, 1, most, "one at a time at less than one a tick")

	fast := newPace(6, 0, 1)
	for range 10 {
		assert.Equal(t, maxPerTick, fast.tick())
	}

	a, b := newPace(0.5, 0, 1), newPace(0.5, 0, 2)
	same := 0
	for range 100 {
		if a.tick() == b.tick() {
			same++
		}
	}
	assert.Less(t, same, 100, "two players of a match do not send on the same ticks")
}
