package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
)

// tcpFlags are the TCP options of a relay's accepted sockets (serve) or of a load
// test's relay and bots: how long a lost segment may hold up the frames behind it
// (docs/operations.md, "TCP on lossy links").
type tcpFlags struct {
	rtoMin, delackMax time.Duration
	thinLinear        bool
	kernel            bool
}

func addTCPFlags(fl *pflag.FlagSet, f *tcpFlags, whose string) {
	fl.DurationVar(&f.rtoMin, "tcp-rto-min", tcptune.DefaultRTOMin, "floor of the retransmission timeout of "+whose+" (TCP_RTO_MIN_US, Linux 6.15+; the kernel's is 200ms); 0 leaves the kernel's")
	fl.DurationVar(&f.delackMax, "tcp-delack-max", tcptune.DefaultDelackMax, "longest delayed acknowledgement of "+whose+" (TCP_DELACK_MAX_US, Linux 6.15+); 0 leaves the kernel's")
	fl.BoolVar(&f.thinLinear, "tcp-thin-linear", true, "no doubling of the first retransmission timeouts of "+whose+" while few segments are in flight (TCP_THIN_LINEAR_TIMEOUTS)")
	fl.BoolVar(&f.kernel, "tcp-kernel", false, "leave every TCP option of "+whose+" as the kernel has it (overrides the --tcp-* flags)")
}

func (f tcpFlags) options() tcptune.Options {
	if f.kernel {
		return tcptune.Kernel
	}
	o := tcptune.Options{RTOMin: f.rtoMin, DelackMax: f.delackMax, NoThinLinear: !f.thinLinear}
	if o.RTOMin == 0 {
		o.RTOMin = -1
	}
	if o.DelackMax == 0 {
		o.DelackMax = -1
	}
	return o
}

// lossFlag is a loss rate given as a percentage ("2%") or a fraction ("0.02").
type lossFlag struct{ v *float64 }

func (l lossFlag) String() string {
	if l.v == nil || *l.v == 0 {
		return "0%"
	}
	return strconv.FormatFloat(*l.v*100, 'g', -1, 64) + "%"
}

func (l lossFlag) Set(s string) error {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return fmt.Errorf("%q: give a percentage (2%%) or a fraction (0.02)", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v >= 1 {
		return fmt.Errorf("%q: a loss rate is from 0%% to below 100%% (2%% or 0.02)", s)
	}
	*l.v = v
	return nil
}

func (lossFlag) Type() string { return "percent" }
