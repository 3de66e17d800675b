package loadtest

import "math"

// maxPerTick caps the messages a connection sends on one tick.
const maxPerTick = 4

// pace spreads a rate of messages per tick over the ticks: each tick adds the rate to a
// credit, and every whole unit of credit is a message sent on that tick. The bots pace
// their commands with it, and the input floor's readers all their messages.
type pace struct {
	rate   float64 // messages per tick
	credit float64
}

// newPace paces rate messages per tick for a match's player, starting at a
// golden-ratio phase so that the players' sends spread over the ticks.
func newPace(rate float64, match int, player uint32) pace {
	_, credit := math.Modf(float64(match*16+int(player)) * 0.6180339887)
	return pace{rate: rate, credit: credit}
}

// tick returns how many messages to send on this tick.
func (p *pace) tick() int {
	p.credit += p.rate
	n := min(int(p.credit), maxPerTick)
	p.credit -= float64(n)
	return n
}
