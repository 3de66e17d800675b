// The relay clock's phases: where in a tick period each match seals.

package relay

import (
	"sync"
	"time"
)

// phaseWidth is the spacing of the relay clock's phases. Every match seals on one of
// them, so the matches of a phase wake the process once per tick together instead of
// each at its own instant, and the commands their players send in answer to a frame reach
// a process that is still awake. Narrow enough that a phase's burst of work, at the most
// a core can hold, stays within a few milliseconds.
const phaseWidth = 4 * time.Millisecond

// phaseCount is how many phases a tick rate's period has: about phaseWidth apart, and at
// least two.
func phaseCount(rate int) int { return max(2, int(time.Second/time.Duration(rate)/phaseWidth)) }

// matchClock is when a match seals each tick: on the relay's grid for its rate and phase,
// so every match of a phase seals at the same instants, to the nanosecond.
type matchClock struct {
	origin time.Time // the phase's instant of grid step 0
	k0     int64     // the grid step of tick 0's start: tick t is sealed at step k0+t+1
	rate   int
}

// deadline is when tick t is sealed.
func (c matchClock) deadline(t uint64) time.Time { return c.step(c.k0 + int64(t) + 1) }

// step is the grid's k-th instant: origin + k/rate, in exact nanoseconds (rounded
// down). k counts periods since the relay started, so k·1e9 would overflow after months
// at high rates: whole seconds and the rest are scaled apart.
func (c matchClock) step(k int64) time.Time {
	rate := int64(c.rate)
	q, r := k/rate, k%rate
	if r < 0 {
		q, r = q-1, r+rate
	}
	return c.origin.Add(time.Duration(q)*time.Second + time.Duration(r*int64(time.Second)/rate))
}

// phases hands each match a phase of the relay clock, the least used one.
type phases struct {
	epoch time.Time
	mu    sync.Mutex
	used  map[int][]int // per tick rate: running matches on each phase
}

func newPhases(epoch time.Time) *phases {
	return &phases{epoch: epoch, used: map[int][]int{}}
}

// take picks the least used phase of rate and returns it with a clock whose tick `first`
// starts at the phase's first instant at or after t.
func (p *phases) take(rate int, first uint64, t time.Time) (int, matchClock) {
	p.mu.Lock()
	used := p.used[rate]
	if used == nil {
		used = make([]int, phaseCount(rate))
		p.used[rate] = used
	}
	best := 0
	for i, n := range used {
		if n < used[best] {
			best = i
		}
	}
	used[best]++
	p.mu.Unlock()
	c := matchClock{origin: p.epoch.Add(time.Duration(best) * time.Second / time.Duration(rate) / time.Duration(len(used))), rate: rate}
	d := t.Sub(c.origin)
	k := int64(d/time.Second)*int64(rate) + int64(d%time.Second)*int64(rate)/int64(time.Second) // within a step of the answer
	for c.step(k).Before(t) {
		k++
	}
	for !c.step(k - 1).Before(t) {
		k--
	}
	c.k0 = k - int64(first)
	return best, c
}

// release gives back a phase taken for rate.
func (p *phases) release(rate, i int) {
	p.mu.Lock()
	if used := p.used[rate]; i < len(used) && used[i] > 0 {
		used[i]--
	}
	p.mu.Unlock()
}
