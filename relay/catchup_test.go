package relay

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
)

// Every stream point, live or rebuilt from the file after a restart, is where a reader
// can start: its first tick record is a whole frame or an idle record, never a packed
// frame (whose tick and seqs come from the records before it).
func TestStreamPointsStartAtRecordsAReaderCanPlace(t *testing.T) {
	t.Parallel()
	bm := newBenchMatch(t, 2, 1, false)
	for i := range 400 {
		if i%7 < 4 { // runs of ticks with commands and empty ones
			bm.submit(t, 0)
		}
		bm.m.seal(time.Now())
		bm.drainNow()
	}
	if err := bm.m.writer.FlushIdle(); err != nil {
		t.Fatal(err)
	}
	file, rp := bm.loadStream(t)
	if len(rp.Frames) < 200 {
		t.Fatalf("only %d ticks with commands; the test needs packed frames", len(rp.Frames))
	}
	check := func(name string, points []streamPoint) {
		t.Helper()
		if len(points) < 5 {
			t.Fatalf("%s: only %d points", name, len(points))
		}
		for _, p := range points {
			kind, tick := firstTickRecord(t, file[p.off:])
			switch kind {
			case "frame", "idle":
				if kind == "frame" && tick != p.next {
					t.Errorf("%s: point %+v starts at a %s record for tick %d", name, p, kind, tick)
				}
			case "":
			default:
				t.Errorf("%s: point %+v starts at a %s record", name, p, kind)
			}
		}
	}
	check("live", bm.m.points)
	check("rebuilt", pointsIn(file))
}

// firstTickRecord returns the name of the first frame, idle or packed record in b, and
// the tick a frame is for.
func firstTickRecord(t *testing.T, b []byte) (name string, tick uint64) {
	t.Helper()
	w := stream.NewWalker(b)
	for w.Next() {
		var msg pb.ServerMessage
		require.NoError(t, w.Decode(&msg, nil))
		switch name := stream.RecordName(&msg); name {
		case "frame", "idle", "packed":
			return name, msg.GetFrame().GetTick()
		}
	}
	require.NoError(t, w.Err())
	return "", 0
}

// After a restart the relay notes a point where it goes on sealing; like every other
// point, it must be followed by a whole frame or an idle record.
func TestTheRestartPointStartsAtARecordAReaderCanPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, MatchID: uuid.NewString(), TickRate: 30}
	start := opts.Start()
	path := filepath.Join(dir, start.GetMatchId()+".tkr")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := replay.NewWriter(f, start, &replay.WriterOptions{IdleFlush: 30})
	require.NoError(t, err)
	bots, err := scripted.New(opts.Options)
	require.NoError(t, err)
	for range 100 {
		st, err := bots.Next()
		require.NoError(t, err)
		require.NoError(t, w.Frame(st.Frame))
	}
	require.NoError(t, f.Close()) // no end record: a crashed relay's file

	srv, err := New(Options{ReplayDir: dir, TokenSecret: bytes.Repeat([]byte{7}, 32)}, nil)
	require.NoError(t, err)
	r, err := replay.Reopen(path, nil)
	require.NoError(t, err)
	m, err := resumeMatch(srv, r, time.Now())
	require.NoError(t, err)
	defer m.stream.release()
	restart := m.points[len(m.points)-1]
	for seq := range uint32(10) {
		_, err := m.sched.Submit(1, 1000+seq, m.sched.NextTick(), []byte("x"))
		require.NoError(t, err)
		m.seal(time.Now())
	}
	file, err := m.stream.read(0, m.stream.size)
	require.NoError(t, err)
	_, err = replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	kind, tick := firstTickRecord(t, file[restart.off:])
	assert.Equal(t, "frame", kind, "the first tick record after the restart point %+v", restart)
	assert.Equal(t, restart.next, tick)
}
