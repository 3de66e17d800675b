package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// dump --from --to shows the idle runs that cover part of the range and no others. (It
// printed 138 of 139 on a 900-tick file for ticks 600..620.)
func TestDumpFromToShowsOnlyTheIdleRunsInTheRange(t *testing.T) {
	a := recordFile(t, "900")
	out, code := run(t, "replay", "dump", a, "--from", "600", "--to", "620")
	assert.Equal(t, 0, code)
	n := 0
	for _, l := range strings.Split(out, "\n") {
		var off, through uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "%d idle through=%d", &off, &through); err == nil && through < 599 {
			n++
		}
	}
	assert.Zero(t, n, "idle records that end before tick 599 are printed")
	assert.Contains(t, out, "idle through=", "the runs in the range are")
}

// --speed out of 0..16 is refused by watch FILE as by replay play. (watch took a negative
// speed as unpaced, and a tiny one slept for years between ticks.)
func TestASpeedOutOfRangeIsRefusedByBothPlayers(t *testing.T) {
	path := recordFile(t, "30")
	for _, cmd := range [][]string{{"replay", "play", path}, {"watch", path}} {
		for _, speed := range []string{"-1", "17"} {
			_, code := run(t, append(cmd, "--speed", speed)...)
			assert.Equal(t, 2, code, "%v --speed %s", cmd, speed)
		}
	}
}
