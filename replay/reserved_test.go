package replay_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/lib/mapappend"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// padTo appends zeros to b up to a multiple of mapappend.Align bytes.
func padTo(b []byte) []byte {
	n := (len(b) + mapappend.Align - 1) / mapappend.Align * mapappend.Align
	return append(b, make([]byte, n-len(b))...)
}

// A relay appends to its file through a mapping and is killed: the file ends in the zero
// bytes it had reserved. It reads up to its last record and reopens to go on.
func TestAFileLeftByAKilledMappedWriterReadsToItsLastRecordAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.tkr")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	require.NoError(t, err)
	app := mapappend.New(f, 0)
	w, err := replay.NewWriter(app, testStart(2), nil)
	require.NoError(t, err)
	// Enough frames to cross several windows.
	payload := bytes.Repeat([]byte{7}, 200)
	for tick := uint64(0); tick < 1000; tick++ {
		require.NoError(t, w.Frame(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: payload}}}))
	}
	require.Greater(t, app.Size(), int64(2*mapappend.Window))
	// Killed: no Close, no Finish; the mapping's bytes are the file's.
	require.NoError(t, f.Close())

	rp, err := replay.LoadFile(path)
	require.NoError(t, err)
	require.NotNil(t, rp.Cut)
	assert.Equal(t, app.Size(), rp.Cut.Offset)
	assert.Positive(t, rp.Cut.Reserved)
	assert.Zero(t, rp.Cut.Partial)
	assert.Equal(t, uint64(1000), rp.Ticks)
	assert.Len(t, rp.Frames, 1000)
	assert.Contains(t, rp.Cut.Error(), "zero bytes the relay had reserved ahead of its writes")

	r, err := replay.Reopen(path, nil)
	require.NoError(t, err)
	assert.Equal(t, rp.Cut.Reserved, r.Reserved)
	assert.Zero(t, r.Repaired)
	w2 := r.Writer(r.File)
	require.NoError(t, w2.Frame(lockstep.Frame{Tick: 1000, Commands: []sim.Command{{Player: 2, Seq: 1, Payload: []byte{1}}}}))
	require.NoError(t, w2.Close(nil))
	rp, err = replay.LoadFile(path)
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	assert.Equal(t, uint64(1001), rp.Ticks)
	assert.Len(t, rp.Frames, 1001)
}

// tornFile is what a relay killed in the middle of copying its last append leaves: the
// appends before, a zero where the last starts (its first byte is stored last), the rest
// of it copied up to cut, then zeros to a multiple of mapappend.Align.
func tornFile(t *testing.T, cut int) (file []byte, whole int64) { return tornFileOf(t, cut, 40) }

// tornFileOf is tornFile with a last frame of a payload of payload bytes: past
// stream.MaxBlock, that append ends with the block's crc record.
func tornFileOf(t *testing.T, cut, payload int) (file []byte, whole int64) {
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	for tick := uint64(0); tick < 50; tick++ {
		require.NoError(t, w.Frame(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: []byte{1, 2, 3}}}}))
	}
	whole = int64(buf.Len())
	require.NoError(t, w.Frame(lockstep.Frame{Tick: 50, Commands: []sim.Command{{Player: 2, Seq: 1, Payload: bytes.Repeat([]byte{9}, payload)}}}))
	last := buf.Bytes()[whole:]
	if payload > stream.MaxBlock {
		_, ok := stream.CRCBody(last[len(last)-stream.CRCRecordSize:])
		require.True(t, ok, "the last append ends its block with a crc record")
	}
	b := append([]byte(nil), buf.Bytes()[:whole]...)
	b = append(b, 0)
	b = append(b, last[1:min(cut, len(last))]...)
	return padTo(b), whole
}

func TestAnAppendTornByAKillIsCutAtItsStart(t *testing.T) {
	for _, tc := range []struct{ cut, payload int }{
		{1, 40}, {2, 40}, {5, 40}, {20, 40}, {1000, 40}, {1 << 20, 40},
		// An append that ends a block, copied in part, or whole but for its first byte.
		{20, stream.MaxBlock + 100}, {1 << 20, stream.MaxBlock + 100},
	} {
		file, whole := tornFileOf(t, tc.cut, tc.payload)
		rp, err := replay.Load(bytes.NewReader(file))
		require.NoError(t, err, "%+v", tc)
		require.NotNil(t, rp.Cut)
		assert.Equal(t, whole, rp.Cut.Offset, "%+v", tc)
		assert.Equal(t, int64(len(file))-whole, rp.Cut.Reserved)
		assert.Equal(t, uint64(50), rp.Ticks, "the torn tick is not read")
	}
}

func TestAZeroWhereARecordStartsIsDamageUnlessItCanBeAReservedTail(t *testing.T) {
	finished := blocky(t)
	for _, tc := range []struct {
		name string
		file func() ([]byte, int64)
	}{
		{"a torn append in a file not a multiple of 4096 long", func() ([]byte, int64) {
			file, whole := tornFile(t, 20)
			return append(file, 0), whole
		}},
		{"a finished file with a record's first byte zeroed", func() ([]byte, int64) {
			b := bytes.Clone(finished)
			at := int64(replay.HeaderSize) // the start record's tag
			b[at] = 0
			return b, at
		}},
		{"the same, padded with zeros as a reserved tail would be", func() ([]byte, int64) {
			file, whole := tornFile(t, 20)
			b := bytes.Clone(file[:whole])
			b = append(b, 0)
			b = append(b, finished[replay.HeaderSize+1:]...) // ends with an end record and its crc
			for len(b)%mapappend.Align != 0 {
				b = append(b[:whole+1], append([]byte{5}, b[whole+1:]...)...)
			}
			return b, whole
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, at := tc.file()
			_, err := replay.Load(bytes.NewReader(file))
			var ce *replay.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.LessOrEqual(t, ce.Offset, at, "damage is reported at or before its byte")
			assert.Contains(t, ce.Reason, "a zero byte where a record should start")
		})
	}
}

func TestZerosAfterTheEndAreTheReservedTailOfAFinishedFile(t *testing.T) {
	finished := blocky(t)
	rp, err := replay.Load(bytes.NewReader(padTo(bytes.Clone(finished))))
	require.NoError(t, err)
	require.NotNil(t, rp.End)
	assert.Nil(t, rp.Cut)

	_, err = replay.Load(bytes.NewReader(append(padTo(bytes.Clone(finished)), 0)))
	var ce *replay.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, int64(len(finished)), ce.Offset)
	assert.Contains(t, ce.Reason, "not the tail a killed relay leaves")
	require.False(t, errors.Is(err, replay.ErrTruncated))
}

// recordStarts returns the offsets where a file's records start, after its header.
func recordStarts(t *testing.T, b []byte) []int {
	var starts []int
	w := stream.NewWalker(b[replay.HeaderSize:])
	for w.Next() {
		starts = append(starts, replay.HeaderSize+w.Offset())
	}
	require.NoError(t, w.Err())
	return starts
}

// unfinished is what a killed relay leaves of blocky's match: its records, then zeros
// to a multiple of mapappend.Align.
func unfinished(t *testing.T) (file []byte, whole int) {
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	writeBlocky(t, w)
	return padTo(bytes.Clone(buf.Bytes())), buf.Len()
}

func TestAZeroedRecordStartBeforeAWholeCheckedBlockIsDamageNotACut(t *testing.T) {
	file, whole := unfinished(t)
	starts := recordStarts(t, file[:whole])
	last := starts[len(starts)-1]
	damagedEarly := 0
	for _, at := range starts[1:] { // the start record's block is read before any tick
		b := bytes.Clone(file)
		b[at] = 0
		rp, err := replay.Load(bytes.NewReader(b))
		var ce *replay.CorruptError
		if errors.As(err, &ce) {
			assert.LessOrEqual(t, ce.Offset, int64(at))
			damagedEarly++
			continue
		}
		// Read as a cut only where no whole checked block follows: within the last two
		// blocks (the documented limit), never earlier.
		require.NoError(t, err, "zero at %d", at)
		require.NotNil(t, rp.Cut)
		assert.Equal(t, int64(at), rp.Cut.Offset)
		assert.Greater(t, at, last-2*4096, "a zero at byte %d of %d read as a cut", at, whole)
	}
	assert.Greater(t, damagedEarly, len(starts)/2)
}

// A relay killed in Writer.Close after its end record, before cutting its reserved tail,
// leaves a finished file and zeros: damage to it is never read as a cut (which a
// restarted relay would resume).
func TestAFinishedFileWithAReservedTailIsNeverReadAsCut(t *testing.T) {
	finished := blocky(t)
	starts := recordStarts(t, finished)
	for _, at := range starts[len(starts)-8:] {
		b := padTo(bytes.Clone(finished))
		b[at] = 0
		_, err := replay.Load(bytes.NewReader(b))
		var ce *replay.CorruptError
		require.ErrorAs(t, err, &ce, "zero at %d", at)
		path := filepath.Join(t.TempDir(), "f.tkr")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err = replay.Reopen(path, nil)
		require.ErrorAs(t, err, &ce, "zero at %d: never resumed", at)
	}
}

func TestReopenSaysAFileOfZerosHasNothingWrittenAndCutsAFinishedFilesTail(t *testing.T) {
	dir := t.TempDir()
	for name, b := range map[string][]byte{"empty": nil, "zeros": make([]byte, mapappend.Window)} {
		path := filepath.Join(dir, name+".tkr")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err := replay.Reopen(path, nil)
		assert.ErrorIs(t, err, replay.ErrUnwritten, name)
	}
	finished := blocky(t)
	path := filepath.Join(dir, "finished.tkr")
	require.NoError(t, os.WriteFile(path, padTo(bytes.Clone(finished)), 0o644))
	_, err := replay.Reopen(path, nil)
	require.ErrorIs(t, err, replay.ErrFinished)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, finished, got, "the zeros after the end record are cut off")
}
