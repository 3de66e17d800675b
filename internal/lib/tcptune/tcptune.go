package tcptune

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// Defaults, chosen from the loss matrix in docs/performance.md.
const (
	// DefaultRTOMin is the retransmission timeout's floor: 20 ms.
	DefaultRTOMin = 20 * time.Millisecond
	// DefaultDelackMax is the longest delayed acknowledgement: 8 ms (two ticks of a
	// kernel at 250 Hz).
	DefaultDelackMax = 8 * time.Millisecond
)

// Options say how a socket is tuned. The zero value is the package's defaults; a
// negative duration, or Kernel, leaves the kernel's own.
type Options struct {
	// RTOMin is the retransmission timeout's floor (TCP_RTO_MIN_US). 0 means
	// DefaultRTOMin; negative, the kernel's (200 ms).
	RTOMin time.Duration
	// DelackMax bounds a delayed acknowledgement (TCP_DELACK_MAX_US). 0 means
	// DefaultDelackMax; negative, the kernel's (200 ms at most, 40 ms at least).
	DelackMax time.Duration
	// NoThinLinear leaves the retransmission timer's doubling as the kernel has it;
	// by default a thin stream's first retransmissions wait the same timeout each.
	NoThinLinear bool
}

// Kernel leaves every option as the kernel has it.
var Kernel = Options{RTOMin: -1, DelackMax: -1, NoThinLinear: true}

func (o Options) rtoMin() time.Duration {
	if o.RTOMin == 0 {
		return DefaultRTOMin
	}
	return o.RTOMin
}

func (o Options) delackMax() time.Duration {
	if o.DelackMax == 0 {
		return DefaultDelackMax
	}
	return o.DelackMax
}

// Applied is what a socket took: each option the kernel accepted, with the value it
// reports back (rounded to its tick), and each it refused.
type Applied struct {
	RTOMin     time.Duration `json:"rto_min_ns,omitempty"`
	DelackMax  time.Duration `json:"delack_max_ns,omitempty"`
	ThinLinear bool          `json:"thin_linear,omitempty"`
	// Refused names the options the kernel refused, with its reason.
	Refused []string `json:"refused,omitempty"`
}

// String reads as "rto_min 20ms, delack_max 8ms, thin linear timeouts" or "kernel
// defaults", with what was refused.
func (a Applied) String() string {
	var on []string
	if a.RTOMin > 0 {
		on = append(on, "rto_min "+a.RTOMin.String())
	}
	if a.DelackMax > 0 {
		on = append(on, "delack_max "+a.DelackMax.String())
	}
	if a.ThinLinear {
		on = append(on, "thin linear timeouts")
	}
	s := "kernel defaults"
	if len(on) > 0 {
		s = strings.Join(on, ", ")
	}
	if len(a.Refused) > 0 {
		s += " (refused: " + strings.Join(a.Refused, "; ") + ")"
	}
	return s
}

// Apply tunes a connection (one a listener accepted); anything but a TCP connection
// is left alone.
func Apply(c net.Conn, o Options) Applied {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return Applied{}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return Applied{}
	}
	var a Applied
	_ = rc.Control(func(fd uintptr) { a = applyFD(fd, o) })
	return a
}

// Control is a net.Dialer.Control that tunes each TCP socket before it connects (the
// handshake's own retransmissions keep the kernel's timer: the round trip is unknown).
func Control(o Options) func(network, address string, c syscall.RawConn) error {
	return func(network, _ string, c syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil
		}
		return c.Control(func(fd uintptr) { applyFD(fd, o) })
	}
}

// Probe reports what this kernel takes of o, on a TCP socket of its own that is never
// connected.
func Probe(o Options) (Applied, error) {
	return probe(o)
}

func (a *Applied) refuse(opt string, err error) {
	a.Refused = append(a.Refused, fmt.Sprintf("%s: %v", opt, err))
}

// Read reports what a TCP connection's options are now (what the kernel reports; an
// option it does not know reads as zero).
func Read(c net.Conn) (Applied, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return Applied{}, fmt.Errorf("tcptune: %T is no socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return Applied{}, err
	}
	var a Applied
	if err := rc.Control(func(fd uintptr) { a = readFD(fd) }); err != nil {
		return Applied{}, err
	}
	return a, nil
}
