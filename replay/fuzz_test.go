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

// FuzzSplitRecord walks any bytes as concatenated records, as a spectator client does.
func FuzzSplitRecord(f *testing.F) {
	f.Add(replay.AppendIdle(nil, 40))
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			n, err := replay.SplitRecord(b)
			if err != nil {
				return
			}
			if n <= 0 || n > len(b) {
				t.Fatalf("SplitRecord returned %d for %d bytes", n, len(b))
			}
			b = b[n:]
		}
	})
}
