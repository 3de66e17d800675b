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
	f.Add(padTo(bytes.Clone(file[:len(file)/2]))) // a killed relay's reserved tail
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

// FuzzDamage damages one byte of a finished file of many blocks and may cut it: a
// damaged byte is always reported as damage at or before its offset, unless it lies in
// what a cut file leaves unchecked (the block its writer was killed in).
func FuzzDamage(f *testing.F) {
	file := blocky(f)
	f.Add(uint16(100), byte(0x01), uint16(len(file)))
	f.Add(uint16(len(file)-20), byte(0x80), uint16(len(file)))
	f.Add(uint16(500), byte(0xff), uint16(800))
	f.Fuzz(func(t *testing.T, pos uint16, x byte, cut uint16) {
		n := min(int(cut), len(file))
		b := bytes.Clone(file[:n])
		p := len(replay.Magic) + 1 + int(pos)
		if x == 0 || p >= n {
			return // undamaged: TestAFileCutAtEveryLengthReadsItsBeginning
		}
		b[p] ^= x
		rp, err := replay.Load(bytes.NewReader(b))
		var ce *replay.CorruptError
		switch {
		case errors.As(err, &ce):
			// In the unchecked tail of a cut file only the format's rules can notice
			// damage, at the record they break.
			if ce.Offset > int64(p) && (rp == nil || int64(p) < rp.Checked) {
				t.Fatalf("byte %d ^ %02x (file cut at %d): damage reported at byte %d, past it: %v", p, x, n, ce.Offset, err)
			}
		case err == nil && rp.Cut != nil && int64(p) >= rp.Checked:
			// In the unchecked tail of a cut file.
		case rp == nil && errors.Is(err, replay.ErrTruncated):
			// A start block cut before its crc record: nothing was believed.
		default:
			t.Fatalf("byte %d ^ %02x (file cut at %d): not reported as damage: %v", p, x, n, err)
		}
	})
}
