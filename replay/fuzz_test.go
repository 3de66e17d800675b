package replay_test

import (
	"bytes"
	"testing"

	"github.com/tickrelay/tickrelay/replay"
)

// FuzzLoad feeds any bytes to the reader: it must return a replay or an error, never panic,
// and a replay that loads must survive re-simulation.
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
		_, _ = replay.Verify(rp, replay.VerifyOptions{})
		_ = replay.Summarize(rp)
	})
}
