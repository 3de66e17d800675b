package relay

import "time"

// delayEstimator turns a player's reported round-trip times into a suggested input delay.
//
// A command a client sends while it holds tick T targets T+1+delay. Sent at the worst
// moment (just before frame T+1 reaches the client) it reaches the relay an RTT after
// T+1 was sealed, and T+1+delay is sealed delay ticks after T+1: so it is on time when
// RTT < delay ticks, and the suggestion is ceil((srtt + 4·rttvar) / tick), the RTT with
// RFC 6298's margin for its variation (the margin of a retransmission timeout). A LAN or
// loopback RTT gets 1; a steady 80 ms at 30 Hz gets 3; a varying one more.
//
// A client that sends right after it applies a frame (Join.sends_on_frame, as bots do)
// sends at the best moment instead: its command is on time when RTT < delay+1 ticks, so
// it is suggested one tick less, down to 0 (one tick less than the match's minimum).
//
// srtt and rttvar are smoothed as TCP does (RFC 6298: alpha 1/8, beta 1/4), in integer
// microseconds.
type delayEstimator struct {
	srtt, rttvar int64 // microseconds; srtt 0 means no sample yet
	tick         int64 // microseconds per tick
	min, max     int
	onFrame      bool // the client sends right after each frame: one tick less
	predicts     bool // the client predicts: the usual round trip, not nearly every one
	current      int
}

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
	if d.srtt == 0 {
		d.srtt, d.rttvar = rttUs, rttUs/2
	} else {
		diff := d.srtt - rttUs
		if diff < 0 {
			diff = -diff
		}
		d.rttvar += (diff - d.rttvar) / 4
		d.srtt += (rttUs - d.srtt) / 8
	}
	need := d.srtt + 4*d.rttvar
	if d.predicts {
		need = d.srtt + d.rttvar
	}
	ticks := int((need + d.tick - 1) / d.tick)
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
