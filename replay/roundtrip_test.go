package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// record returns a scripted 4-bot skirmish match of ticks ticks as replay bytes.
func record(t testing.TB, seed, ticks uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	_, err := scripted.Record(&buf, scripted.RecordOptions{
		Options: scripted.Options{Seed: seed, Players: 4},
		Ticks:   ticks, MatchID: "00000000-0000-4000-8000-000000000001",
	})
	require.NoError(t, err)
	return buf.Bytes()
}

func TestRoundTripOfA20000TickMatchVerifies(t *testing.T) {
	file := record(t, 1, 20000)
	rp, err := replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	require.Nil(t, rp.Cut)
	require.NotNil(t, rp.End)
	assert.Equal(t, uint64(20000), rp.Ticks)
	assert.Equal(t, uint64(19999), rp.End.GetLastTick())
	assert.Equal(t, int64(len(file)), rp.Size)
	assert.Len(t, rp.Checkpoints, 20000/30)

	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, uint64(20000), rep.Ticks)
	assert.Equal(t, 20000/30, rep.Checkpoints)

	// The re-simulated final state is the scripted match's: compare with the hash stream.
	var hashes bytes.Buffer
	require.NoError(t, scripted.WriteHashes(&hashes, scripted.Options{Seed: 1, Players: 4}, 20000, 100))
	expect, err := replay.ParseHashes(&hashes)
	require.NoError(t, err)
	rep, err = replay.Verify(rp, replay.VerifyOptions{Expect: expect})
	require.NoError(t, err)
	assert.Equal(t, len(expect), rep.Expected)
}

func TestVerifyNamesTheTickOfACorruptedCheckpoint(t *testing.T) {
	rp, err := replay.Load(bytes.NewReader(record(t, 2, 900)))
	require.NoError(t, err)
	bad := rp.Checkpoints[10]
	bad.Hash ^= 1

	_, err = replay.Verify(rp, replay.VerifyOptions{})
	var div *replay.DivergenceError
	require.ErrorAs(t, err, &div)
	assert.Equal(t, bad.GetTick(), div.Tick)
	assert.Equal(t, bad.GetHash(), div.Expected)
	assert.Equal(t, bad.GetHash()^1, div.Computed)
	assert.ErrorIs(t, err, replay.ErrDiverged)
}

func TestVerifyAgainstAnExpectedHashStreamNamesTheFirstMismatch(t *testing.T) {
	rp, err := replay.Load(bytes.NewReader(record(t, 2, 300)))
	require.NoError(t, err)
	var hashes bytes.Buffer
	require.NoError(t, scripted.WriteHashes(&hashes, scripted.Options{Seed: 3, Players: 4}, 300, 50))
	expect, err := replay.ParseHashes(&hashes)
	require.NoError(t, err)
	_, err = replay.Verify(rp, replay.VerifyOptions{Expect: expect})
	var div *replay.DivergenceError
	require.ErrorAs(t, err, &div)
	assert.Equal(t, "expected hash stream", div.Source)
	assert.Equal(t, uint64(49), div.Tick)
}

type versionTwoSim struct{ n uint64 }

func (s *versionTwoSim) Step(uint64, []sim.Command) { s.n++ }
func (s *versionTwoSim) Hash() uint64               { return s.n }

func init() {
	sim.Register("replay-test", 2, func(sim.Config) (sim.Sim, error) { return &versionTwoSim{}, nil })
}

func TestIdentityMismatchesAreNamed(t *testing.T) {
	start := func(version uint32) *pb.Start {
		s := &pb.Start{SimName: "replay-test", SimVersion: version, Seed: 1, Players: []*pb.Player{{Id: 1}, {Id: 2}}, ChecksumEvery: 30}
		s.ConfigHash = replay.ConfigHash(s)
		return s
	}
	tests := []struct {
		name  string
		start *pb.Start
		field string
	}{
		{"a replay of sim version 1 against version 2 names the sim version", start(1), "sim version"},
		{"an unknown sim names the sim", &pb.Start{SimName: "no-such-sim", Players: []*pb.Player{{Id: 1}}}, "sim name"},
		{"an edited header names the config hash", func() *pb.Start { s := start(2); s.Seed = 2; return s }(), "config hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := replay.NewWriter(&buf, tt.start, nil)
			require.NoError(t, err)
			require.NoError(t, w.Frame(lockstep.Frame{Tick: 0}))
			require.NoError(t, w.Close(nil))
			rp, err := replay.Load(&buf)
			require.NoError(t, err)
			_, err = replay.Verify(rp, replay.VerifyOptions{})
			var id *replay.IdentityError
			require.ErrorAs(t, err, &id)
			assert.Equal(t, tt.field, id.Field)
			assert.ErrorIs(t, err, replay.ErrIdentity)
			if tt.field != "config hash" {
				assert.Contains(t, err.Error(), fmt.Sprintf("differs: the match has %s version %d, this program has ", tt.start.GetSimName(), tt.start.GetSimVersion()))
				assert.Contains(t, err.Error(), "with --sim-dir DIR", "says what to pass")
				assert.NotContains(t, err.Error(), "{", "names sims as a person reads them")
			}
		})
	}
}

func TestACrashedWriterLeavesAReadablePrefix(t *testing.T) {
	// Write half a match through a real file and never Close it, as a SIGKILLed relay
	// would, then read the file back.
	path := filepath.Join(t.TempDir(), "crash.tkr")
	m, err := scripted.New(scripted.Options{Seed: 4, Players: 4})
	require.NoError(t, err)
	opts := scripted.RecordOptions{Options: scripted.Options{Seed: 4, Players: 4}, MatchID: "00000000-0000-4000-8000-000000000002"}
	w, err := replay.Create(path, opts.Start(), nil)
	require.NoError(t, err)
	var lastWithCommands uint64
	for tick := 0; tick < 1000; tick++ {
		step, err := m.Next()
		require.NoError(t, err)
		require.NoError(t, w.Frame(step.Frame))
		if len(step.Frame.Commands) > 0 {
			lastWithCommands = step.Frame.Tick
		}
		if step.Report {
			require.NoError(t, w.Checkpoint(step.Checksum.Tick, step.Checksum.Hash))
		}
	}
	full, err := os.ReadFile(path)
	require.NoError(t, err)

	t.Run("cut between records, every whole record is read", func(t *testing.T) {
		rp, err := replay.Load(bytes.NewReader(full))
		require.NoError(t, err)
		require.NotNil(t, rp.Cut)
		assert.ErrorIs(t, rp.Cut, replay.ErrTruncated)
		assert.Zero(t, rp.Cut.Partial)
		assert.GreaterOrEqual(t, rp.Ticks, lastWithCommands+1, "every tick with commands is on disk")
		rep, err := replay.Verify(rp, replay.VerifyOptions{})
		require.NoError(t, err)
		assert.Equal(t, rp.Ticks, rep.Ticks)
		assert.Contains(t, rp.Cut.Error(), "without an end record")
	})
	t.Run("cut inside a record, the reader says where", func(t *testing.T) {
		rp, err := replay.Load(bytes.NewReader(full[:len(full)-3]))
		require.NoError(t, err)
		require.NotNil(t, rp.Cut)
		assert.NotZero(t, rp.Cut.Partial)
		assert.Equal(t, int64(len(full)-3), rp.Cut.Offset+rp.Cut.Partial)
		assert.Contains(t, rp.Cut.Error(), "inside a record")
	})
}

func TestReaderRefusesWhatIsNotAReplayOfThisVersion(t *testing.T) {
	file := record(t, 1, 50)
	other := append([]byte{}, file...)
	other[len(replay.Magic)] = replay.FormatVersion + 1

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"an empty file is not a replay", nil, replay.ErrNotReplay},
		{"a text file is not a replay", []byte("hello, world\n"), replay.ErrNotReplay},
		{"another format version is refused", other, replay.ErrVersion},
		{"a cut magic is a truncated file", file[:4], replay.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := replay.NewReader(bytes.NewReader(tt.in))
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

// A version 1 file (whole frames only, as the first relays wrote) reads as it always did;
// a packed frame in one is corrupt.
func TestReaderReadsFormatVersion1(t *testing.T) {
	v1 := append(replay.Magic[:], 1)
	v1, err := stream.AppendRecord(v1, &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: testStart(2)}})
	require.NoError(t, err)
	v1 = stream.AppendIdle(v1, 9)
	f := lockstep.Frame{Tick: 10, Commands: []sim.Command{{Player: 1, Seq: 4, Payload: []byte("go")}}}
	v1 = stream.AppendFrame(v1, f)
	end, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: 10}}})
	require.NoError(t, err)

	rp, err := replay.Load(bytes.NewReader(append(v1, end...)))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), rp.Version)
	assert.Equal(t, uint64(11), rp.Ticks)
	require.Len(t, rp.Frames, 1)
	assert.Equal(t, uint32(4), rp.Frames[0].Commands[0].Seq)

	packed := append(v1, 0x6a, 0x04, 0x01, 0x02, 0x01, 0x07)
	_, err = replay.Load(bytes.NewReader(packed))
	var ce *replay.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "format version 1")
}

func TestReaderRejectsRecordsThatBreakTheRules(t *testing.T) {
	start := scripted.RecordOptions{Options: scripted.Options{Seed: 1, Players: 2}, MatchID: "x"}.Start()
	head := func() []byte {
		var buf bytes.Buffer
		w, err := replay.NewWriter(&buf, start, nil)
		require.NoError(t, err)
		require.NoError(t, w.EndBlock())
		return buf.Bytes()
	}
	rec := func(msg *pb.ServerMessage) []byte {
		b, err := stream.AppendRecord(nil, msg)
		require.NoError(t, err)
		return b
	}
	frame := func(tick uint64, cmds ...*pb.Command) []byte {
		return rec(&pb.ServerMessage{Msg: &pb.ServerMessage_Frame{Frame: &pb.Frame{Tick: tick, Commands: cmds}}})
	}
	cmd := func(player, seq uint32) *pb.Command { return &pb.Command{Player: player, Seq: seq, Payload: []byte{1}} }
	packed := func(body ...byte) []byte { return rec(&pb.ServerMessage{Msg: &pb.ServerMessage_Packed{Packed: body}}) }
	tests := []struct {
		name, reason string
		body         []byte
	}{
		{"a frame that skips a tick", "stream is at tick 0", frame(1, cmd(1, 1))},
		{"an empty frame", "empty ticks are idle records", frame(0)},
		{"a command from a player who is not in the match", "players 1..2", frame(0, cmd(3, 1))},
		{"commands out of canonical order", "(player, seq) order", frame(0, cmd(2, 1), cmd(1, 1))},
		{"a checkpoint for an unsealed tick", "not sealed yet", rec(&pb.ServerMessage{Msg: &pb.ServerMessage_Checkpoint{Checkpoint: &pb.Checkpoint{Tick: 0}}})},
		{"an idle run that goes back", "already at tick", append(stream.AppendIdle(nil, 10), stream.AppendIdle(nil, 5)...)},
		{"a record that does not belong in a file", "does not belong", rec(&pb.ServerMessage{Msg: &pb.ServerMessage_Pong{Pong: &pb.Pong{}}})},
		{"an end with the wrong last tick", "last tick is 7", append(stream.AppendIdle(nil, 3), rec(&pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: 7}}})...)},
		{"a record after the end in its block", "after the end record", append(rec(&pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{}}}), stream.AppendIdle(nil, 3)...)},
		{"an empty packed frame", "no commands", packed()},
		{"a packed command from a player not in the match", "players 1..2", packed(3, 2, 1, 7)},
		{"a packed command from player 0", "players 1..2", packed(0, 2, 1, 7)},
		{"a packed seq below 0", "out of range", packed(1, 1, 1, 7)},
		{"a packed seq past 2^32-1", "out of range", packed(1, 0x80, 0x80, 0x80, 0x80, 0x20, 1, 7)},
		{"a packed payload cut short", "bad payload", packed(1, 2, 5, 7)},
		{"a packed varint cut short", "bad seq varint", packed(1, 0x80)},
		{"packed commands out of canonical order", "(player, seq) order", packed(2, 2, 1, 7, 1, 2, 1, 7)},
		{"a packed seq that repeats", "(player, seq) order", packed(1, 2, 1, 7, 1, 0, 1, 7)},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is corrupt", func(t *testing.T) {
			// Each body is a whole block, with its crc record: the rules hold in checked
			// blocks too.
			file := append(head(), sealBlock(tt.body)...)
			_, err := replay.Load(bytes.NewReader(file))
			var ce *replay.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Reason, tt.reason)
			assert.GreaterOrEqual(t, ce.Offset, int64(len(head())))
		})
	}
}

// A record kind a newer writer added (field 100 here) is skipped: the file's contract
// says readers skip what they do not know, and its bytes are checked with its block.
// After the end record it is damage like any record there.
func TestAReaderSkipsARecordKindItDoesNotKnow(t *testing.T) {
	start := testStart(2)
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, start, nil)
	require.NoError(t, err)
	require.NoError(t, w.EndBlock())
	unknown := []byte{0xa2, 0x06, 0x03, 1, 2, 3} // field 100, 3 bytes
	idle := stream.AppendIdle(nil, 9)
	file := append(buf.Bytes(), sealBlock(append(unknown, idle...))...)
	end, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: 9}}})
	require.NoError(t, err)
	file = append(file, sealBlock(end)...)
	rp, err := replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	assert.Equal(t, uint64(10), rp.Ticks)
	require.NotNil(t, rp.End)

	_, err = replay.Load(bytes.NewReader(append(file[:len(file)-len(sealBlock(end))], sealBlock(append(end, unknown...))...)))
	assert.ErrorIs(t, err, replay.ErrCorrupt, "nothing follows the end record")
}

func TestEveryCutAndEveryFlippedByteIsAnErrorNotAPanic(t *testing.T) {
	file := record(t, 5, 240)
	rp, err := replay.Load(bytes.NewReader(file))
	require.NoError(t, err)
	whole := rp.Ticks

	for n := 0; n < len(file); n++ {
		rp, err := replay.Load(bytes.NewReader(file[:n]))
		if err != nil {
			// A cut file never reads as corrupt: only the header can fail to load, and a
			// cut inside the crc record after the end record cannot be told from damage.
			require.False(t, errors.Is(err, replay.ErrCorrupt) && rp.End == nil, "cut at %d: %v", n, err)
			continue
		}
		require.NotNil(t, rp.Cut, "cut at %d must say it was cut", n)
		require.LessOrEqual(t, rp.Ticks, whole)
		require.LessOrEqual(t, rp.Cut.Offset+rp.Cut.Partial, int64(n))
	}
	flipped := make([]byte, len(file))
	for i := range file {
		copy(flipped, file)
		flipped[i] ^= 0xff
		rp, err := replay.Load(bytes.NewReader(flipped))
		if err == nil {
			// Some flips still give a valid stream (a payload byte): re-simulating it must
			// not panic either.
			_, _ = replay.Verify(rp, replay.VerifyOptions{})
		}
	}
}

func TestReaderStreamsRecordsAndEndsWithEOF(t *testing.T) {
	r, err := replay.NewReader(bytes.NewReader(record(t, 1, 100)))
	require.NoError(t, err)
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		n++
	}
	assert.Positive(t, n)
	last, ok := r.LastTick()
	assert.True(t, ok)
	assert.Equal(t, uint64(99), last)
}

// sealBlock returns body and a crc record for it: a whole block of a version 3 file.
func sealBlock(body []byte) []byte {
	var b stream.Block
	b.Add(body)
	return stream.AppendCRC(append([]byte(nil), body...), b.Sum())
}

func TestReaderRejectsBytesAfterTheEndAndTicksInTheLobby(t *testing.T) {
	start := testStart(2)
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, start, nil)
	require.NoError(t, err)
	require.NoError(t, w.Close(nil))
	_, err = replay.Load(bytes.NewReader(append(buf.Bytes(), 7)))
	var ce *replay.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "after the end record")
	assert.Equal(t, int64(buf.Len()), ce.Offset)
	// Zeros, then anything else, are damage too.
	_, err = replay.Load(bytes.NewReader(append(append(bytes.Clone(buf.Bytes()), 0, 0, 0), 7)))
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "after the end record")
	assert.Contains(t, ce.Reason, fmt.Sprintf("byte %d is not zero", buf.Len()+3))
	assert.Equal(t, int64(buf.Len()), ce.Offset)

	_, err = replay.Load(bytes.NewReader(append(lobbyHead(t, start), sealBlock(stream.AppendIdle(nil, 3))...)))
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "before the match's started event")
}

// lobbyHead is the start of a file whose match is in its lobby: no started event.
func lobbyHead(t *testing.T, start *pb.Start) []byte {
	var buf bytes.Buffer
	_, err := replay.NewWriter(&buf, start, &replay.WriterOptions{Lobby: true})
	require.NoError(t, err)
	return buf.Bytes()
}
