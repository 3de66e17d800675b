package replay_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tickrelay/tickrelay/replay"
)

// FuzzLoad feeds any bytes to the reader: it must return a replay or an error, never panic,
// and a replay that loads must survive re-simulation with a consistent report and
// summary.
func FuzzLoad(f *testing.F) {
	file := record(f, 1, 200)
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add(replay.Magic[:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := replay.Load(bytes.NewReader(b))
		if err != nil || rp.Ticks > 5000 {
			return
		}
		rep, err := replay.Verify(rp, replay.VerifyOptions{})
		var div *replay.DivergenceError
		switch {
		case err == nil:
			if rep.Ticks != rp.Ticks || rep.Checkpoints > len(rp.Checkpoints) {
				t.Fatalf("Verify passed %d of %d ticks and %d of %d checkpoints", rep.Ticks, rp.Ticks, rep.Checkpoints, len(rp.Checkpoints))
			}
		case errors.As(err, &div):
			if div.Tick >= rp.Ticks || div.Expected == div.Computed || rep.Ticks != div.Tick+1 {
				t.Fatalf("a divergence at tick %d (%016x vs %016x) after %d of %d ticks", div.Tick, div.Expected, div.Computed, rep.Ticks, rp.Ticks)
			}
		case rep.Ticks > rp.Ticks:
			t.Fatalf("Verify failed (%v) after %d ticks of %d", err, rep.Ticks, rp.Ticks)
		}
		sum := replay.Summarize(rp)
		perPlayer := 0
		for _, n := range sum.PerPlayer {
			perPlayer += n
		}
		if sum.Frames+sum.IdleTicks != rp.Ticks || sum.Frames > rp.Ticks || perPlayer != sum.Commands {
			t.Fatalf("the summary does not add up: %+v for %d ticks", sum, rp.Ticks)
		}
	})
}
