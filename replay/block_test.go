package replay_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// blocky writes a finished 2-player file of many small blocks, as a relay does: a point
// (Anchor) every 30 ticks, a command every 3 ticks, checkpoints and events between.
func blocky(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	writeBlocky(t, w)
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_ALL_LEFT}))
	return buf.Bytes()
}

// writeBlocky writes blocky's 300 ticks, and what comes between them, to w.
func writeBlocky(t testing.TB, w *replay.Writer) {
	t.Helper()
	for tick := uint64(0); tick < 300; tick++ {
		f := lockstep.Frame{Tick: tick}
		if tick%3 == 0 {
			f.Commands = []sim.Command{{Player: uint32(1 + tick%2), Seq: uint32(tick + 1), Payload: []byte{byte(tick), 1, 2, 3, 4, 5, 6, 7}}}
		}
		require.NoError(t, w.Frame(f))
		if tick%30 == 29 {
			require.NoError(t, w.Checkpoint(tick-10, tick*7))
			require.NoError(t, w.Anchor())
		}
		if tick == 100 {
			require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: pb.Event_KIND_DROPPED, Player: 2, Tick: 100}}}))
		}
	}
}

// Every byte after the header, flipped, is reported as damage at or before its offset:
// never read as another match, never as a file that merely stops early.
func TestEveryFlippedByteIsDamageAtItsBlock(t *testing.T) {
	file := blocky(t)
	for pos := len(replay.Magic) + 1; pos < len(file); pos++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(file)
			b[pos] ^= x
			_, err := replay.Load(bytes.NewReader(b))
			var ce *replay.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("byte %d ^ %02x: want damage reported, got %v", pos, x, err)
			}
			if ce.Offset > int64(pos) {
				t.Fatalf("byte %d ^ %02x: damage reported at byte %d, past it: %v", pos, x, ce.Offset, ce)
			}
		}
	}
}

// A file cut at any length reads up to its cut, and what it reads is the file's own
// beginning.
func TestAFileCutAtEveryLengthReadsItsBeginning(t *testing.T) {
	file := blocky(t)
	whole, err := replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	for n := 0; n < len(file); n++ {
		rp, err := replay.Load(bytes.NewReader(file[:n]))
		if err != nil {
			var ce *replay.CorruptError
			if errors.As(err, &ce) {
				// Only a cut between the end record and its crc record is damage.
				require.NotNil(t, rp.End, "cut at %d: %v", n, err)
			} else {
				require.True(t, errors.Is(err, replay.ErrTruncated) || errors.Is(err, replay.ErrNotReplay), "cut at %d: %v", n, err)
			}
			continue
		}
		require.NotNil(t, rp.Cut, "cut at %d", n)
		assert.Equal(t, int64(n), rp.Cut.Offset+rp.Cut.Partial, "cut at %d", n)
		require.LessOrEqual(t, len(rp.Frames), len(whole.Frames))
		for i, f := range rp.Frames {
			require.Equal(t, whole.Frames[i].Tick, f.Tick, "cut at %d", n)
		}
		assert.LessOrEqual(t, rp.Checked, rp.Cut.Offset)
		assert.Equal(t, rp.Cut.Offset-rp.Checked, rp.Cut.Unchecked)
		// The cut names the last tick that was read.
		assert.Equal(t, rp.Ticks > 0, rp.Cut.HasTick, "cut at %d", n)
		if rp.Ticks > 0 {
			assert.Equal(t, rp.Ticks-1, rp.Cut.LastTick, "cut at %d", n)
		}
	}
}
