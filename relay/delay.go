package relay

import "time"

// delayEstimator turns a player's reported round-trip times into a suggested input delay:
// ceil((srtt/2 + rttvar) / tick) + 1, within [min, max]. srtt and rttvar are smoothed as
// TCP does (RFC 6298: alpha 1/8, beta 1/4), in integer microseconds.
type delayEstimator struct {
	srtt, rttvar int64 // microseconds; srtt 0 means no sample yet
	tick         int64 // microseconds per tick
	min, max     int
	current      int
}

func newDelayEstimator(tickRate, initial, min, max int) delayEstimator {
	return delayEstimator{tick: int64(time.Second/time.Microsecond) / int64(tickRate), min: min, max: max, current: clamp(initial, min, max)}
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
	need := d.srtt/2 + d.rttvar
	ticks := int((need+d.tick-1)/d.tick) + 1
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
