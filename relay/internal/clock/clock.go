// Package clock is the relay's tick clock: where in a tick period each match seals
// (its phase), and the one precise wake-up a phase's matches share each tick.
//
// The contract: Phases.Take gives a match a Match clock and a channel that wakes it at
// each instant of its phase; the match seals every tick whose Deadline has passed when
// it wakes (an instant missed by a starved process is not replayed: the deadlines say
// what is owed), and gives both back with Release when it stops. Matches of one phase
// seal at the same instants, to the nanosecond; a phase's wake-up is a timerfd on Linux
// (on time to the kernel's timer slack), a Go timer elsewhere. Nothing here knows what
// a match is.
package clock

import (
	"math/bits"
	"slices"
	"sync"
	"time"
)

// phaseWidth is the spacing of the relay clock's phases. Every match seals on one of
// them, so the matches of a phase wake the process once per tick together instead of
// each at its own instant, and the commands their players send in answer to a frame reach
// a process that is still awake.
const phaseWidth = 2 * time.Millisecond

// phaseCount is how many phases a tick rate's period has: about phaseWidth apart, and at
// least two.
func phaseCount(rate int) int { return max(2, int(time.Second/time.Duration(rate)/phaseWidth)) }

// phaseMatches is how many matches of a rate each open phase holds before the relay opens
// another. Few matches share one phase and one wake-up a tick: each wake-up of an idle
// process costs CPU (20 matches of 4 players cost 10–30 % less per frame in one phase
// than spread over eight). Many spread over every phase, so a phase's burst stays about
// 2 ms long at 40 matches of 4 players. At 300 matches the open phases are the 8 that
// every match used to spread over: near one core's capacity, more phases measured no
// better. Measured in docs/performance-history.md ("More phases, to shorten each burst").
const phaseMatches = 40

// openPhases is how many of a rate's n phases hold its matches when it has `matches`
// (the one starting included).
func openPhases(matches, n int) int { return min(n, max(1, (matches+phaseMatches-1)/phaseMatches)) }

// spreadOrder is the order in which a rate's n phases open: every prefix of it is spread
// over the period. The k-th phase to open is the one at the k-th point of the van der
// Corput sequence (0, 1/2, 1/4, 3/4, 1/8, …) of the period, rounded down to the grid and
// skipped if already open; with 2^b ≥ n such points every phase is reached.
func spreadOrder(n int) []int {
	b := bits.Len(uint(n - 1))
	order, open := make([]int, 0, n), make([]bool, n)
	for k := range 1 << b {
		i := int(bits.Reverse(uint(k))>>(bits.UintSize-b)) * n >> b
		if !open[i] {
			open[i] = true
			order = append(order, i)
		}
	}
	return order
}

// Match is when a match seals each tick: on the relay's grid for its rate and phase,
// so every match of a phase seals at the same instants, to the nanosecond.
type Match struct {
	origin time.Time // the phase's instant of grid step 0
	k0     int64     // the grid step of tick 0's start: tick t is sealed at step k0+t+1
	rate   int
}

// Deadline is when tick t is sealed.
func (c Match) Deadline(t uint64) time.Time { return c.step(c.k0 + int64(t) + 1) }

// step is the grid's k-th instant: origin + k/rate, in exact nanoseconds (rounded
// down). k counts periods since the relay started, so k·1e9 would overflow after months
// at high rates: whole seconds and the rest are scaled apart.
func (c Match) step(k int64) time.Time {
	rate := int64(c.rate)
	q, r := k/rate, k%rate
	if r < 0 {
		q, r = q-1, r+rate
	}
	return c.origin.Add(time.Duration(q)*time.Second + time.Duration(r*int64(time.Second)/rate))
}

// stepAtOrAfter is the first k whose instant is t or later.
func (c Match) stepAtOrAfter(t time.Time) int64 {
	d, rate := t.Sub(c.origin), int64(c.rate)
	k := int64(d/time.Second)*rate + int64(d%time.Second)*rate/int64(time.Second) // within a step of it
	for c.step(k).Before(t) {
		k++
	}
	for !c.step(k - 1).Before(t) {
		k--
	}
	return k
}

// NewMatch is a clock of rate not yet on a phase (Take gives the one a match runs on).
func NewMatch(rate int) Match { return Match{rate: rate} }

// Phases hands each match a phase of the relay clock, the least used open one, and wakes
// the matches of each phase at its instants.
type Phases struct {
	epoch time.Time
	mu    sync.Mutex
	rates map[int][]*Ticker // per tick rate, its phases in the order they open
}

// NewPhases returns the phases of a relay whose grids start at epoch.
func NewPhases(epoch time.Time) *Phases {
	return &Phases{epoch: epoch, rates: map[int][]*Ticker{}}
}

// Ticker wakes the matches of one phase at each instant of its grid, in the order
// they took it: one precise wake-up for all of them (phaseWaiter), and each match's
// frames leave at the same point of the phase's burst tick after tick.
type Ticker struct {
	grid Match // the phase's grid (k0 unused)
	mu   sync.Mutex
	subs []chan struct{}
	stop chan struct{} // closed when the last match leaves; nil while none
	w    *phaseWaiter  // the running ticker's
}

// Take picks the least used of rate's open phases (as many as its matches need, at
// phaseMatches each) and returns it with a clock whose tick `first` starts at the phase's
// first instant at or after t, and the channel that wakes the match at each instant of
// the phase (give both back with Release). Nothing moves a running match: after a peak,
// phases past the open ones keep waking their matches until those end.
func (p *Phases) Take(rate int, first uint64, t time.Time) (*Ticker, Match, <-chan struct{}) {
	p.mu.Lock()
	ts := p.rates[rate]
	if ts == nil {
		n := phaseCount(rate)
		for _, i := range spreadOrder(n) {
			origin := p.epoch.Add(time.Duration(i) * time.Second / time.Duration(rate) / time.Duration(n))
			ts = append(ts, &Ticker{grid: Match{origin: origin, rate: rate}})
		}
		p.rates[rate] = ts
	}
	matches := 1
	for _, pt := range ts {
		matches += pt.load()
	}
	open := ts[:openPhases(matches, len(ts))]
	best := open[0]
	for _, pt := range open {
		if pt.load() < best.load() {
			best = pt
		}
	}
	wake := best.subscribe()
	p.mu.Unlock()

	c := best.grid
	c.k0 = c.stepAtOrAfter(t) - int64(first)
	return best, c, wake
}

// Release gives back a phase and its channel, taken together.
func (p *Phases) Release(pt *Ticker, wake <-chan struct{}) {
	p.mu.Lock()
	pt.unsubscribe(wake)
	p.mu.Unlock()
}

func (pt *Ticker) load() int {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return len(pt.subs)
}

// subscribe adds a match, starting the ticker for the first one.
func (pt *Ticker) subscribe() <-chan struct{} {
	wake := make(chan struct{}, 1)
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.subs = append(pt.subs, wake)
	if pt.stop == nil {
		pt.stop, pt.w = make(chan struct{}), newPhaseWaiter()
		go pt.run(pt.stop, pt.w)
	}
	return wake
}

// unsubscribe removes a match, stopping the ticker after the last one.
func (pt *Ticker) unsubscribe(wake <-chan struct{}) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for i, c := range pt.subs {
		if c == wake {
			pt.subs = slices.Delete(pt.subs, i, i+1)
			break
		}
	}
	if len(pt.subs) == 0 && pt.stop != nil {
		close(pt.stop)
		pt.w.interrupt()
		pt.stop, pt.w = nil, nil
	}
}

// run wakes the subscribed matches at each instant of the grid until stop closes. An
// instant missed (the process was starved) is skipped: each match seals what it owes
// by its own deadlines when it wakes.
func (pt *Ticker) run(stop chan struct{}, w *phaseWaiter) {
	defer w.close()
	var subs []chan struct{}
	now := time.Now()
	for {
		if !w.wait(pt.grid.step(pt.grid.stepAtOrAfter(now.Add(time.Nanosecond))), stop) {
			return
		}
		// The time now, before the sends: an instant that passes while they run (the
		// thread descheduled, a crowded phase) is then woken for at once, not skipped.
		now = time.Now()
		pt.mu.Lock()
		subs = append(subs[:0], pt.subs...)
		pt.mu.Unlock()
		for _, c := range subs {
			select {
			case c <- struct{}{}:
			default: // it has not taken the last one yet
			}
		}
	}
}

// wait blocks until t by the monotonic clock (never earlier: a nap may end early), or
// until stop closes: then it returns false.
func (w *phaseWaiter) wait(t time.Time, stop <-chan struct{}) bool {
	for {
		select {
		case <-stop:
			return false
		default:
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		if !w.nap(d, stop) {
			return false
		}
	}
}

// goTimer sleeps on one reused Go timer: the phase waiter's, where it has nothing more
// precise.
type goTimer struct{ t *time.Timer }

// sleep waits d, or until stop closes: then it returns false.
func (g *goTimer) sleep(d time.Duration, stop <-chan struct{}) bool {
	if g.t == nil {
		g.t = time.NewTimer(d)
	} else {
		g.t.Reset(d)
	}
	select {
	case <-g.t.C:
		return true
	case <-stop:
		return false
	}
}

func (g *goTimer) stop() {
	if g.t != nil {
		g.t.Stop()
	}
}
