package relay

import "time"

// delayEstimator turns a player's reported round-trip times into a suggested input delay.
//
// A command a client sends while it holds tick T targets T+1+delay. Sent at the worst
// moment (just before frame T+1 reaches the client) it reaches the relay an RTT after
// T+1 was sealed, and T+1+delay is sealed delay ticks after T+1: so it is on time when
// RTT < delay ticks, and the suggestion is the fewest ticks longer than a high RTT.
//
// A client that sends right after it applies a frame (Join.sends_on_frame, as bots do)
// sends at the best moment instead: its command is on time when RTT < delay+1 ticks, so
// it is suggested one tick less, down to 0 (one tick less than the match's minimum).
//
// The high RTT is the second highest of the last rttWindow samples: one sample held up
// by a lost packet (on TCP a retransmission, ~200 ms) does not move the delay, and it is
// forgotten rttWindow samples later, where a smoothed variance (RFC 6298's srtt +
// 4·rttvar) let one such sample hold every later command back for seconds. Two late
// samples in the window do move it: a path that got slower is followed within two
// samples. A command that is late anyway moves to the next open tick; it is not lost.
// With fewer than rttFew samples the highest one counts, plus half of it: too few to know
// the spread. A player that predicts gets the median instead, from its first sample on
// (the usual round trip, not nearly every one: its prediction hides the rest).
type delayEstimator struct {
	rtts     [rttWindow]int64 // the last samples in microseconds, a ring
	n        int              // samples seen, for the ring's next slot and the start
	tick     int64            // microseconds per tick
	min, max int
	onFrame  bool // the client sends right after each frame: one tick less
	predicts bool // the client predicts: the usual round trip, not nearly every one
	current  int
}

const (
	rttWindow = 16 // samples: at a ping a second, the last 16 s
	rttFew    = 4  // below this many samples the estimate keeps a start margin
)

func newDelayEstimator(tickRate, initial, lo, hi int, onFrame, predicts bool) delayEstimator {
	if onFrame {
		lo = max(lo-1, 0)
	}
	return delayEstimator{tick: int64(time.Second/time.Microsecond) / int64(tickRate), min: lo, max: hi, onFrame: onFrame, predicts: predicts, current: clamp(initial, lo, hi)}
}

// observe records one RTT sample in microseconds and returns the new suggested delay.
func (d *delayEstimator) observe(rttUs int64) int {
	if rttUs <= 0 {
		return d.current
	}
	d.rtts[d.n%rttWindow] = rttUs
	d.n++
	// Sorted on the stack: 16 values, once a second per player.
	var s [rttWindow]int64
	k := min(d.n, rttWindow)
	copy(s[:], d.rtts[:k])
	for i := 1; i < k; i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	var need int64
	switch {
	case d.predicts:
		need = s[k/2]
	case k < rttFew:
		need = s[k-1] + s[k-1]/2
	default:
		need = s[k-2]
	}
	ticks := int(need/d.tick) + 1 // on time when RTT < delay ticks: strictly fewer
	if d.onFrame {
		ticks--
	}
	d.current = clamp(ticks, d.min, d.max)
	return d.current
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
