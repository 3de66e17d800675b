package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
)

func TestNetLossTakesAPercentageOrAFraction(t *testing.T) {
	for in, want := range map[string]float64{"2%": 0.02, "0.02": 0.02, "0": 0, "12.5%": 0.125} {
		var v float64
		assert.NoError(t, lossFlag{&v}.Set(in), in)
		assert.InDelta(t, want, v, 1e-12, in)
	}
	for _, in := range []string{"100%", "1", "-1%", "two", "2 %"} {
		var v float64
		assert.Error(t, lossFlag{&v}.Set(in), in)
	}
	v := 0.02
	assert.Equal(t, "2%", lossFlag{&v}.String())
}

func TestTheTCPFlagsZeroLeavesTheKernelsAndKernelLeavesAll(t *testing.T) {
	assert.Equal(t, tcptune.Kernel, tcpFlags{rtoMin: 5 * time.Millisecond, kernel: true}.options())
	o := tcpFlags{rtoMin: 0, delackMax: 8 * time.Millisecond, thinLinear: true}.options()
	assert.Negative(t, o.RTOMin, "0 on the command line is the kernel's own")
	assert.Equal(t, 8*time.Millisecond, o.DelackMax)
	assert.False(t, o.NoThinLinear)
}
