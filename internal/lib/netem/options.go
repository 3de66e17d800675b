package netem

import (
	"fmt"
	"strings"
	"time"
)

// Options describe the emulated link between a server and its clients. The zero value
// is a lossless link at loopback's round trip.
type Options struct {
	// Loss is the chance (0..1) that a packet is dropped, in each direction on its own.
	Loss float64 `json:"loss"`
	// Burst, if positive, makes the loss bursty: a packet picked for loss starts a fade
	// this long in which every packet of its connection in its direction is dropped
	// (nftables' timeouts count in milliseconds). The share of packets lost is then
	// more than Loss, by how many packets a fade catches.
	Burst time.Duration `json:"burst_ns,omitempty"`
	// Delay is added to every packet in each direction: the round trip grows by twice it.
	Delay time.Duration `json:"delay_ns,omitempty"`
	// Jitter adds up to this much more to each packet, uniformly; packets keep their
	// order (a packet waits for the one ahead) unless Reorder.
	Jitter time.Duration `json:"jitter_ns,omitempty"`
	// Reorder is the fraction (0..1) of packets that ignore the order and leave when
	// their own delay says, overtaking packets held longer.
	Reorder float64 `json:"reorder,omitempty"`
	// Seed seeds the forwarder's jitter and reordering (the kernel draws the loss).
	Seed uint64 `json:"seed,omitempty"`
}

// Validate says what is out of range.
func (o Options) Validate() error {
	switch {
	case o.Loss < 0 || o.Loss >= 1:
		return fmt.Errorf("%w: loss %g: use a fraction in [0, 1), e.g. 0.02 for 2%%", ErrOptions, o.Loss)
	case o.Reorder < 0 || o.Reorder > 1:
		return fmt.Errorf("%w: reorder %g: use a fraction in [0, 1]", ErrOptions, o.Reorder)
	case o.Delay < 0 || o.Jitter < 0 || o.Burst < 0:
		return fmt.Errorf("%w: delay, jitter and burst cannot be negative", ErrOptions)
	case o.Delay > 10*time.Second || o.Jitter > 10*time.Second:
		return fmt.Errorf("%w: delay %s and jitter %s: at most 10s each", ErrOptions, o.Delay, o.Jitter)
	case o.Burst > 0 && o.Burst < time.Millisecond:
		return fmt.Errorf("%w: burst %s: at least 1ms (nftables counts milliseconds)", ErrOptions, o.Burst)
	case o.Reorder > 0 && o.Jitter == 0:
		return fmt.Errorf("%w: reordering needs jitter (packets overtake only those held longer)", ErrOptions)
	}
	return nil
}

// forwarded reports whether the link needs the forwarder (two namespaces): any delay,
// jitter or reordering. Loss alone is dropped on one namespace's loopback.
func (o Options) forwarded() bool { return o.Delay > 0 || o.Jitter > 0 || o.Reorder > 0 }

// String reads as what is applied, e.g. "2% loss, 50ms ±10ms each way (RTT 100ms)".
func (o Options) String() string {
	var parts []string
	if o.Loss > 0 {
		s := fmt.Sprintf("%g%% loss each way", o.Loss*100)
		if o.Burst > 0 {
			s += fmt.Sprintf(" in %s fades", o.Burst)
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "no loss")
	}
	if o.forwarded() {
		s := o.Delay.String()
		if o.Jitter > 0 {
			s += fmt.Sprintf(" +0..%s", o.Jitter)
		}
		s += fmt.Sprintf(" each way (RTT %s)", 2*o.Delay)
		if o.Reorder > 0 {
			s += fmt.Sprintf(", %g%% reordered", o.Reorder*100)
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "loopback round trip")
	}
	return strings.Join(parts, ", ")
}
