package replay_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

func testStart(players int) *pb.Start {
	return scripted.RecordOptions{Options: scripted.Options{Seed: 1, Players: players}, MatchID: "00000000-0000-4000-8000-00000000000a"}.Start()
}

// countingWriter counts Write calls, to hold the writer to one write per record.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

func TestWriterWritesEachRecordAtOnceAndCoalescesIdleTicks(t *testing.T) {
	var out countingWriter
	w, err := replay.NewWriter(&out, testStart(2), &replay.WriterOptions{IdleFlush: 100})
	require.NoError(t, err)
	require.Equal(t, 1, out.writes, "the header is written at once")

	for tick := uint64(0); tick < 250; tick++ {
		require.NoError(t, w.Frame(lockstep.Frame{Tick: tick}))
	}
	assert.Equal(t, 3, out.writes, "250 empty ticks with IdleFlush 100 are two idle records so far")

	require.NoError(t, w.Frame(lockstep.Frame{Tick: 250, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: []byte("go")}}}))
	assert.Equal(t, 4, out.writes, "a frame with commands is written before Frame returns, with the pending idle run")
	require.NoError(t, w.Checkpoint(249, 0xabc))
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_ALL_LEFT}))

	rp, err := replay.Load(&out.Buffer)
	require.NoError(t, err)
	assert.Equal(t, uint64(251), rp.Ticks)
	require.Len(t, rp.Frames, 1)
	assert.Equal(t, uint64(250), rp.Frames[0].Tick)
	assert.Equal(t, pb.End_REASON_ALL_LEFT, rp.End.GetReason())
	assert.Equal(t, uint64(250), rp.End.GetLastTick())
}

func TestWriterRefusesOutOfOrderFrames(t *testing.T) {
	w, err := replay.NewWriter(&bytes.Buffer{}, testStart(2), nil)
	require.NoError(t, err)
	require.NoError(t, w.Frame(lockstep.Frame{Tick: 0}))
	assert.ErrorIs(t, w.Frame(lockstep.Frame{Tick: 2}), replay.ErrOrder)
	assert.ErrorIs(t, w.Frame(lockstep.Frame{Tick: 0}), replay.ErrOrder)
	assert.NoError(t, w.Frame(lockstep.Frame{Tick: 1}))
}

func TestWriterSizeCapIsAnErrorTheCallerSees(t *testing.T) {
	var out bytes.Buffer
	w, err := replay.NewWriter(&out, testStart(2), &replay.WriterOptions{MaxBytes: 400})
	require.NoError(t, err)
	var capErr error
	for tick := uint64(0); tick < 100 && capErr == nil; tick++ {
		capErr = w.Frame(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1), Payload: make([]byte, 20)}}})
	}
	require.ErrorIs(t, capErr, replay.ErrTooLarge)
	assert.LessOrEqual(t, out.Len(), 400, "nothing past the cap is written")
	assert.ErrorIs(t, w.Checkpoint(0, 1), replay.ErrTooLarge, "the error is sticky")
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_MAX_DURATION, Detail: "size cap"}))

	rp, err := replay.Load(&out)
	require.NoError(t, err, "a capped file still ends with its end record")
	assert.Equal(t, "size cap", rp.End.GetDetail())
}

func TestWriterRecordTakesOnlyStreamRecords(t *testing.T) {
	w, err := replay.NewWriter(&bytes.Buffer{}, testStart(2), nil)
	require.NoError(t, err)
	assert.Error(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Pong{Pong: &pb.Pong{}}}))
	assert.Error(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_HealState{HealState: &pb.HealState{}}}), "a connection's own")
	assert.Error(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: &pb.Frame{}}}), "frames go through Frame")
	assert.Error(t, w.Record(&pb.ServerMessage{}), "empty")
	assert.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: pb.Event_KIND_JOINED, Player: 1}}}))
	require.NoError(t, w.Close(nil))
	assert.ErrorIs(t, w.Close(nil), replay.ErrClosed)
	assert.ErrorIs(t, w.Frame(lockstep.Frame{}), replay.ErrClosed)
}

// Packed frames read back as exactly the frames written: any players, seqs (rising,
// repeating across idle runs, falling after a restart), payloads, anchors and gaps.
func TestPackedFramesReadBackAsTheFramesWritten(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var frames []lockstep.Frame
	seq := [5]uint32{}
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(4), &replay.WriterOptions{IndexEvery: 50})
	require.NoError(t, err)
	for tick := uint64(0); tick < 3000; tick++ {
		f := lockstep.Frame{Tick: tick}
		if rng.IntN(3) > 0 {
			for p := uint32(1); p <= 4; p++ {
				for k := range rng.IntN(3) {
					if k == 0 && rng.IntN(20) == 0 {
						seq[p] = rng.Uint32N(1 << 31) // a jump either way (a restarted client)
					} else {
						seq[p] += uint32(1 + rng.IntN(3))
					}
					payload := make([]byte, rng.IntN(12))
					for k := range payload {
						payload[k] = byte(rng.Uint32())
					}
					f.Commands = append(f.Commands, sim.Command{Player: p, Seq: seq[p], Payload: payload})
				}
			}
		}
		if rng.IntN(40) == 0 {
			w.Anchor()
		}
		require.NoError(t, w.Frame(f))
		if len(f.Commands) > 0 {
			frames = append(frames, f)
		}
	}
	require.NoError(t, w.Close(nil))
	rp, err := replay.Load(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Len(t, rp.Frames, len(frames))
	for i := range frames {
		got, want := rp.Frames[i], frames[i]
		require.Equal(t, want.Tick, got.Tick)
		require.Len(t, got.Commands, len(want.Commands), "tick %d", want.Tick)
		for k := range want.Commands {
			assert.Equal(t, want.Commands[k].Player, got.Commands[k].Player, "tick %d", want.Tick)
			assert.Equal(t, want.Commands[k].Seq, got.Commands[k].Seq, "tick %d", want.Tick)
			assert.Equal(t, string(want.Commands[k].Payload), string(got.Commands[k].Payload), "tick %d", want.Tick)
		}
	}
}

// Anchor makes the next tick record one a reader can start at.
func TestAnchorWritesAWholeFrame(t *testing.T) {
	cmd := func(tick uint64, seq uint32) lockstep.Frame {
		return lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: seq, Payload: []byte("x")}}}
	}
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	head := buf.Len()
	require.NoError(t, w.Frame(cmd(0, 1)))
	require.NoError(t, w.Frame(cmd(1, 2))) // the end index's first entry: a reader may start here
	require.NoError(t, w.Frame(cmd(2, 3)))
	require.NoError(t, w.Anchor())
	require.NoError(t, w.Frame(cmd(3, 4)))
	require.NoError(t, w.Frame(cmd(4, 5)))
	require.NoError(t, w.Frame(lockstep.Frame{Tick: 5}))
	require.NoError(t, w.Frame(cmd(6, 6)))
	assert.Equal(t, []string{"event", "packed", "frame", "packed", "frame", "packed", "idle", "packed"}, tickRecords(t, buf.Bytes()))
	// A crc record ends the block before each point a reader may start at (the reader
	// checks them and does not return them): right before the whole frames.
	var crcAt []int
	recs := stream.NewWalker(buf.Bytes()[head:])
	for recs.Next() {
		if _, ok := stream.CRCBody(recs.Record()); ok {
			crcAt = append(crcAt, head+recs.End())
		}
	}
	require.NoError(t, recs.Err())
	require.Len(t, crcAt, 2)
	for _, off := range crcAt {
		assert.Equal(t, byte(0x0a), buf.Bytes()[off], "a whole frame follows the crc record at %d", off)
	}
}

func TestEndIndexPointsAtRecordBoundaries(t *testing.T) {
	file := record(t, 1, 5000)
	rp, err := replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	idx := rp.End.GetIndex()
	require.NotEmpty(t, idx)
	for _, e := range idx {
		n, err := stream.SplitRecord(file[e.GetOffset():])
		require.NoError(t, err, "entry %v", e)
		var msg pb.ServerMessage
		require.NoError(t, stream.DecodeRecord(file[e.GetOffset():e.GetOffset()+uint64(n)], &msg))
		switch m := msg.GetMsg().(type) {
		case *pb.ServerMessage_Frame:
			assert.Equal(t, e.GetTick()+1, m.Frame.GetTick(), "the record after the indexed tick")
		case *pb.ServerMessage_Idle:
			assert.Greater(t, m.Idle.GetThroughTick(), e.GetTick())
		default:
			t.Errorf("index entry %v is at a %T record; a reader starting there could not place it", e, m)
		}
	}
}

// The size targets of the format. Sizes are deterministic, so they are tested, not
// benchmarked.
func TestReplaySizes(t *testing.T) {
	size := func(ticks uint64, frame func(tick uint64) lockstep.Frame) (perTick float64) {
		var buf bytes.Buffer
		w, err := replay.NewWriter(&buf, testStart(4), nil)
		require.NoError(t, err)
		head := buf.Len()
		for tick := uint64(0); tick < ticks; tick++ {
			require.NoError(t, w.Frame(frame(tick)))
		}
		require.NoError(t, w.Close(nil))
		return float64(buf.Len()-head) / float64(ticks)
	}
	t.Run("an idle tick costs at most 0.05 bytes and beats 1 byte per 64 ticks", func(t *testing.T) {
		got := size(100000, func(tick uint64) lockstep.Frame { return lockstep.Frame{Tick: tick} })
		t.Logf("idle: %.4f bytes per tick", got)
		assert.Less(t, got, 0.05)
		assert.Less(t, got, 1.0/64)
	})
	t.Run("a tick with one 8-byte command", func(t *testing.T) {
		got := size(20000, func(tick uint64) lockstep.Frame {
			return lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: uint32(tick%4 + 1), Seq: uint32(tick/4 + 1), Payload: []byte("8bytes!!")}}}
		})
		t.Logf("one 8-byte command: %.2f bytes per tick", got)
		assert.LessOrEqual(t, got, 14.0)
	})
}

func TestTruncatedErrorNamesTheTickAndByte(t *testing.T) {
	err := &replay.TruncatedError{Offset: 100, Partial: 3, LastTick: 41, HasTick: true}
	assert.Contains(t, err.Error(), "after tick 41")
	assert.Contains(t, err.Error(), "byte 103")
	assert.True(t, errors.Is(err, replay.ErrTruncated))
}

// The writer takes frames in canonical order only (the packed coding's seq deltas rely
// on it), and says so rather than write a record that reads back otherwise.
func TestWriterRefusesNonCanonicalFrames(t *testing.T) {
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	x := []byte("x")
	for _, cmds := range [][]sim.Command{
		{{Player: 2, Seq: 1, Payload: x}, {Player: 1, Seq: 1, Payload: x}},
		{{Player: 1, Seq: 5, Payload: x}, {Player: 1, Seq: 5, Payload: x}},
		{{Player: 1, Seq: 200, Payload: x}, {Player: 2, Seq: 1, Payload: x}, {Player: 1, Seq: 201, Payload: x}},
		{{Player: 0, Seq: 1, Payload: x}},                                  // no such player
		{{Player: 1, Seq: 1, Payload: x}, {Player: 3, Seq: 1, Payload: x}}, // a 2-player match
	} {
		assert.ErrorIs(t, w.Frame(lockstep.Frame{Tick: 0, Commands: cmds}), replay.ErrOrder, "%v", cmds)
	}
	require.NoError(t, w.Frame(lockstep.Frame{Tick: 0, Commands: []sim.Command{{Player: 1, Seq: 1, Payload: x}}}))
	_, err = replay.Load(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
}

// A command with no payload reads back with a nil payload whatever its coding, as the
// players received it.
func TestAnEmptyPayloadReadsBackNilInBothCodings(t *testing.T) {
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	for tick := range uint64(3) { // tick 1 is whole (the end index's first entry), 0 and 2 packed
		require.NoError(t, w.Frame(lockstep.Frame{Tick: tick, Commands: []sim.Command{{Player: 1, Seq: uint32(tick + 1)}}}))
	}
	r, err := replay.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	packed := 0
	for range 3 {
		msg, err := r.Next()
		require.NoError(t, err)
		if msg.GetEvent().GetKind() == pb.Event_KIND_STARTED {
			msg, err = r.Next()
			require.NoError(t, err)
		}
		if r.Packed() {
			packed++
		}
		f := msg.GetFrame()
		assert.Nil(t, f.GetCommands()[0].GetPayload(), "tick %d (packed: %v)", f.GetTick(), r.Packed())
	}
	assert.Equal(t, 2, packed)
}

// tickRecords reads file with a Reader and names each record after the Start as it is
// coded in the file ("frame", "packed", "idle", …), up to the end or the cut of an
// unfinished file.
func tickRecords(t *testing.T, file []byte) []string {
	t.Helper()
	r, err := replay.NewReader(bytes.NewReader(file))
	require.NoError(t, err)
	var names []string
	for {
		msg, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				require.ErrorIs(t, err, replay.ErrTruncated)
			}
			return names
		}
		name := stream.RecordName(msg)
		if r.Packed() {
			name = "packed"
		}
		names = append(names, name)
	}
}

func TestTheHeaderIsTheMagicAndTheVersionInHeaderSizeBytes(t *testing.T) {
	head := replay.AppendHeader(nil)
	require.Len(t, head, replay.HeaderSize)
	assert.Equal(t, replay.Magic[:], head[:len(replay.Magic)])
	var buf bytes.Buffer
	_, err := replay.NewWriter(&buf, testStart(2), nil)
	require.NoError(t, err)
	assert.Equal(t, head, buf.Bytes()[:replay.HeaderSize], "the writer writes the same header")
}

func TestEventsOfPicksOneKindInStreamOrder(t *testing.T) {
	var out bytes.Buffer
	w, err := replay.NewWriter(&out, testStart(2), nil)
	require.NoError(t, err)
	for _, e := range []*pb.Event{{Kind: pb.Event_KIND_JOINED, Player: 2}, {Kind: pb.Event_KIND_LEFT, Player: 2}, {Kind: pb.Event_KIND_JOINED, Player: 1}} {
		require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: e}}))
	}
	require.NoError(t, w.Close(&pb.End{}))
	rp, err := replay.Load(&out)
	require.NoError(t, err)
	joined := rp.EventsOf(pb.Event_KIND_JOINED)
	require.Len(t, joined, 2)
	assert.Equal(t, []uint32{2, 1}, []uint32{joined[0].GetPlayer(), joined[1].GetPlayer()})
	assert.Len(t, rp.EventsOf(pb.Event_KIND_LEFT), 1)
	assert.Empty(t, rp.EventsOf(pb.Event_KIND_DROPPED))
}
