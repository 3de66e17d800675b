package relay

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/stream"
)

// testMirror is a mirror with nothing feeding it: the test calls mirrorAppend itself.
func testMirror(t testing.TB) *match {
	srv, err := New(Options{TokenSecret: []byte("0123456789abcdef0123456789abcdef")}, nil)
	require.NoError(t, err)
	m := newMatch(srv, uuid.New(), CreateRequest{}, MatchOptions{TickRate: 30, SpectatorDelay: time.Second}.withDefaults(MatchOptions{}))
	m.mirror = &mirrorState{}
	m.stream, err = openStream(nil, 0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.stream.release()) })
	return m
}

// scriptedStream is a finished 300-tick replay's bytes, and where each record starts.
func scriptedStream(t testing.TB) ([]byte, []int) {
	var b bytes.Buffer
	_, err := scripted.Record(&b, scripted.RecordOptions{Options: scripted.Options{Seed: 3, Players: 2}, Ticks: 300})
	require.NoError(t, err)
	var starts []int
	w := stream.NewWalker(b.Bytes()[startOffset:])
	for w.Next() {
		starts = append(starts, startOffset+w.Offset())
	}
	require.NoError(t, w.Err())
	return b.Bytes(), starts
}

func TestAMirrorKeepsTheBytesItIsFedAndKnowsTheirTicksAndPoints(t *testing.T) {
	t.Parallel()
	b, starts := scriptedStream(t)
	m := testMirror(t)
	// As the owner publishes them: the header with the Start record, then a few records
	// at a time.
	cuts := []int{starts[1]}
	for i := 4; i < len(starts); i += 3 {
		cuts = append(cuts, starts[i])
	}
	cuts = append(cuts, len(b))
	from := 0
	for _, to := range cuts {
		require.NoError(t, m.mirrorAppend(b[from:to]))
		if from == 0 {
			assert.Equal(t, StateRunning, m.state, "the Start record starts the mirror")
		}
		from = to
	}
	assert.Equal(t, StateEnded, m.state, "the end record ends it")
	assert.Equal(t, uint64(300), m.mirror.covered)
	got, err := m.stream.read(startOffset, m.stream.size)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(b[startOffset:], got), "the mirror holds the stream's bytes")
	require.NotEmpty(t, m.points)
	for i := 1; i < len(m.points); i++ {
		assert.Greater(t, m.points[i].next, m.points[i-1].next)
		assert.Greater(t, m.points[i].off, m.points[i-1].off)
	}
	assert.Equal(t, m.stream.size, m.released(), "an ended stream is released whole")
}

func TestAMirrorRefusesAStreamWithoutAReplayHeader(t *testing.T) {
	t.Parallel()
	b, starts := scriptedStream(t)
	m := testMirror(t)
	err := m.mirrorAppend(b[startOffset:starts[1]])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "header")
}

// FuzzMirrorAppend feeds a mirror any bytes, in two pieces: it refuses what is not a
// stream with an error, never panics, and what it released stays within what it holds.
func FuzzMirrorAppend(f *testing.F) {
	b, starts := scriptedStream(f)
	f.Add(b, uint16(starts[1]))
	f.Add(b[:starts[3]], uint16(starts[2]))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		m := testMirror(t)
		k := min(int(cut), len(data))
		for _, piece := range [][]byte{data[:k], data[k:]} {
			if err := m.mirrorAppend(piece); err != nil {
				return
			}
			if m.state != StateLobby {
				r := m.released()
				assert.LessOrEqual(t, r, m.stream.size)
				assert.GreaterOrEqual(t, r, startOffset)
			}
		}
	})
}

// idleCluster is a Cluster whose Watch feeds nothing until it is stopped: the test puts
// what a watch fed, and its end, in the mirror's channels itself.
type idleCluster struct{}

func (idleCluster) Record(uuid.UUID) io.Writer       { return io.Discard }
func (idleCluster) Ended(uuid.UUID, bool)            {}
func (idleCluster) Locate(uuid.UUID) (Remote, error) { return Remote{}, ErrNoMatch }
func (idleCluster) Watch(ctx context.Context, _ uuid.UUID, _ func([]byte) error) error {
	<-ctx.Done()
	return ctx.Err()
}

// When the watch ends, the records it fed before are still taken, in order, before the
// mirror stops: its spectators get the end record. (Both were ready at once, and the
// mirror took either: it stopped with records, the End among them, never taken.)
func TestAMirrorTakesEveryRecordItWasFedBeforeItsWatchEnded(t *testing.T) {
	t.Parallel()
	b, starts := scriptedStream(t)
	var chunks [][]byte
	from := 0
	for i := 4; i < len(starts); i += 6 {
		chunks = append(chunks, b[from:starts[i]])
		from = starts[i]
	}
	chunks = append(chunks, b[from:])
	require.Less(t, len(chunks), 64, "the watch fits in feed's buffer")
	for range 20 {
		srv, err := New(Options{TokenSecret: []byte("0123456789abcdef0123456789abcdef"), Cluster: idleCluster{}}, nil)
		require.NoError(t, err)
		m := newMatch(srv, uuid.New(), CreateRequest{}, MatchOptions{TickRate: 30}.withDefaults(MatchOptions{}))
		m.path = ""
		// The watch has fed everything and returned before the mirror's actor looks.
		m.mirror = &mirrorState{feed: make(chan []byte, 64), watched: make(chan error, 1)}
		m.stream, err = openStream(nil, 0)
		require.NoError(t, err)
		for _, c := range chunks {
			m.mirror.feed <- c
		}
		m.mirror.watched <- nil
		m.runMirror()
		assert.Equal(t, StateEnded, m.state)
		assert.Equal(t, uint64(300), m.mirror.covered, "every record, through the end, was taken")
	}
}
