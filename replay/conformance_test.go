package replay_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tickrelay/tickrelay/internal/lib/mapappend"
	"github.com/tickrelay/tickrelay/internal/testkit/golden"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

// The TypeScript replay reader (client/ts/src/replay.ts) must read every file as this
// package does: the same verdict (whole, cut or corrupt), at the same byte, after the same
// number of ticks. This test writes Go's verdicts on thousands of damaged files to a
// golden file; the TypeScript test (client/ts/test/replay.test.ts, "reads every damaged
// file as Go does") makes the same files and holds its reader to them. Both make the
// files with the generator below, so the golden file holds only the two base files, the
// generator's parameters, a checksum of what it made and the verdicts.

// verdictsGolden is where the TypeScript test reads the verdicts.
const verdictsGolden = "../client/ts/test/testdata/replay-verdicts.json"

var updateTS = flag.Bool("update-ts", false, "rewrite the TypeScript client's golden replay verdicts from this package's reader")

// legacyExample is a format version 2 file (no crc records): the worked example of
// docs/replay-format.md as version 2 wrote it. No build writes version 2 any more; the
// readers still read it.
const legacyExample = "89544b520d0a1a0a02" +
	"4a690a2436663163326139652d303030302d343030302d383030302d3030303030303030303030301208736b69726d69736818012007301e3803403c481e520708011203616e6e520708021203626f6261f1b7c09039976ce66a0d7469636b72656c617920646576708008" +
	"120208240a0e0825120a080210011a04220208016a0702020422020802" +
	"12020827220b081d118877665544332211" +
	"5a0a08021027220408241078"

// conformance is the golden file: the generator's inputs, a CRC-32C of every file it makes
// (each as a u32le length and its bytes, in order), and a verdict per file: "o" whole, "c"
// cut or "x" corrupt, then the byte offset (cut and corrupt), then ":" and the ticks read.
type conformance struct {
	Bases    []string `json:"bases"` // hex
	Seed     uint32   `json:"seed"`
	Mutants  int      `json:"mutants"` // per base
	Align    int      `json:"align"`   // a reserved tail pads a file to a multiple of this
	Files    []string `json:"files"`   // hex: edge cases, read after the mutants
	Checksum uint32   `json:"checksum"`
	Verdicts []string `json:"verdicts"`
}

// richExample is a version 3 file of several blocks: 3 players, packed frames, idle
// runs, checkpoints, a desync with its arbitration and heal, lobby events and the end index.
func richExample(t *testing.T) []byte {
	start := &pb.Start{MatchId: "00000000-0000-4000-8000-000000000003", SimName: "hashchain", SimVersion: 1, Seed: 11,
		TickRate: 30, InputDelay: 2, MaxLead: 60, ChecksumEvery: 30,
		Players: []*pb.Player{{Id: 1, Name: "a"}, {Id: 2, Name: "b"}, {Id: 3, Name: "c"}}, RelayBuild: "conformance"}
	start.ConfigHash = replay.ConfigHash(start)
	var file bytes.Buffer
	w, err := replay.NewWriter(&file, start, &replay.WriterOptions{Lobby: true, IndexEvery: 40})
	require.NoError(t, err)
	for p := uint32(1); p <= 3; p++ {
		require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Event{Event: &pb.Event{Kind: pb.Event_KIND_JOINED, Player: p}}}))
	}
	require.NoError(t, w.Begin())
	seq := [4]uint32{}
	for tick := uint64(0); tick < 120; tick++ {
		f := lockstep.Frame{Tick: tick}
		for p := uint32(1); p <= 3; p++ {
			if (tick*7+uint64(p)*3)%11 < 2 {
				seq[p]++
				f.Commands = append(f.Commands, sim.Command{Player: p, Seq: seq[p], Payload: []byte{byte(tick), byte(p), 0x80}})
			}
		}
		require.NoError(t, w.Frame(f))
		if tick%30 == 29 {
			require.NoError(t, w.Checkpoint(tick-5, 0x0102030405060708^tick))
		}
		if tick == 70 {
			require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Desync{Desync: &pb.Desync{Tick: 60, Groups: []*pb.HashGroup{{Hash: 1, Players: []uint32{1, 3}}, {Hash: 2, Players: []uint32{2}}}, Missing: []uint32{3}}}}))
		}
		if tick == 72 {
			require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Arbitration{Arbitration: &pb.Arbitration{DesyncTick: 60, Hash: 1, Judged: true, Found: true, Players: []uint32{1, 3}}}}))
			require.NoError(t, w.Record(&pb.ServerMessage{Msg: &pb.ServerMessage_Heal{Heal: &pb.Heal{DesyncTick: 60, Tick: 60, Hash: 1, Healed: []uint32{2}}}}))
		}
	}
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_ALL_LEFT}))
	return file.Bytes()
}

// mutants makes the files the verdicts are of, from each base: every prefix, whole and
// padded with a reserved tail; every prefix whose last byte is zeroed (where a killed
// relay's last append starts), whole and padded (to the multiple, and one past it); and
// c.Mutants copies with 1 to 4 random edits (a byte set, deleted, inserted or zeroed, or
// the file cut), every other one of a version 3 base with its crc records' sums made to
// match again (fixCRCs), a third of them padded. The random numbers are xorshift32 from c.Seed;
// client/ts/test/replay.test.ts makes the same files in the same order.
func mutants(c conformance, each func([]byte)) {
	x := c.Seed
	next := func() uint32 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return x
	}
	pad := func(b []byte, extra int) []byte {
		n := (len(b)+c.Align-1)/c.Align*c.Align + extra
		return append(bytes.Clone(b), make([]byte, n-len(b))...)
	}
	for _, h := range c.Bases {
		base, _ := hex.DecodeString(h)
		for n := 0; n <= len(base); n++ {
			each(base[:n])
			each(pad(base[:n], 0))
			if n > 9 {
				b := bytes.Clone(base[:n])
				b[n-1] = 0
				each(b)
				each(pad(b, 0))
				each(pad(b, 1))
			}
		}
		for i := range c.Mutants {
			b := bytes.Clone(base)
			for k := 1 + next()%4; k > 0 && len(b) > 0; k-- {
				at := int(next() % uint32(len(b)))
				switch next() % 5 {
				case 0:
					b[at] = byte(next())
				case 1:
					b = append(b[:at], b[at+1:]...)
				case 2:
					b = append(b[:at], append([]byte{byte(next())}, b[at:]...)...)
				case 3:
					b[at] = 0
				default:
					b = b[:at]
				}
			}
			if i%2 == 1 && base[len(replay.Magic)] >= 3 {
				fixCRCs(b)
			}
			if i%3 == 0 {
				b = pad(b, 0)
			}
			each(b)
		}
	}
}

// edgeCases are files random edits hardly make, on which the two readers once disagreed
// (a review's findings): each is a base with a few bytes changed.
func edgeCases(t *testing.T, bases []string) []string {
	legacy, _ := hex.DecodeString(bases[0])
	rich, _ := hex.DecodeString(bases[1])
	h := func(s string) []byte { b, err := hex.DecodeString(s); require.NoError(t, err); return b }
	replace := func(b []byte, old, new string) []byte {
		require.True(t, bytes.Contains(b, h(old)), old)
		return bytes.Replace(b, h(old), h(new), 1)
	}
	startEnd := 116 // where the legacy example's start record ends
	cases := [][]byte{
		// A tag padded to 6 bytes inside a record (protobuf-es refuses it, protobuf-go reads it).
		replace(legacy, "12020824", "12078880808080800024"),
		// A record header of exactly 20 bytes at the end of the file: cut, not damaged.
		append(bytes.Clone(legacy[:len(legacy)-12]), bytes.Repeat([]byte{0x80}, 20)...),
		// A format version cut short after 8 bytes of a large varint.
		append(bytes.Clone(replay.Magic[:]), h("80808080808080ff")...),
		// An event at tick 100, past the covered ticks.
		replace(legacy, "12020827", "12020827420408011864"),
		// An end record in a file that covers no tick, saying tick 5.
		append(bytes.Clone(legacy[:startEnd]), h("5a021005")...),
		// An idle record through tick 2^64-1, then the rest.
		replace(legacy, "12020824", "120b08ffffffffffffffffff0112020824"),
		// Two idle records through tick 2^53, and an end after tick 2^53-1.
		append(bytes.Clone(legacy[:startEnd]), h("1209088080808080808010"+"1209088080808080808010"+"5a0910ffffffffffffff0f")...),
		// A padded format version.
		append(append(bytes.Clone(replay.Magic[:]), 0x82, 0x00), legacy[9:]...),
	}
	// The rich example's first crc record with its tag, then its length, written long.
	at := len(replay.Magic) + 1
	for rich[at] != 0x72 {
		n, err := stream.SplitRecord(rich[at:])
		require.NoError(t, err)
		at += n
	}
	require.Equal(t, byte(0x04), rich[at+1])
	// A record kind a newer writer added (field 100), just before that crc record, the sum
	// made right: both readers skip it.
	newer := append(append(bytes.Clone(rich[:at]), 0xa2, 0x06, 0x02, 7, 7), rich[at:]...)
	fixCRCs(newer)
	cases = append(cases,
		append(append(bytes.Clone(rich[:at]), 0xf2, 0x00), rich[at+1:]...),
		append(append(bytes.Clone(rich[:at+1]), 0x84, 0x00), rich[at+2:]...),
		newer)
	out := make([]string, len(cases))
	for i, b := range cases {
		out[i] = hex.EncodeToString(b)
	}
	return out
}

// fixCRCs sets the sum of every crc record (its tag and length one byte each) of a
// version 3 file to its block's, as far as the records parse, so that damage gets past
// the block check to the rules behind it.
func fixCRCs(b []byte) {
	sum := crc32.MakeTable(crc32.Castagnoli)
	from := len(replay.Magic) + 1
	for pos := from; pos < len(b); {
		tag, tn := protowire.ConsumeVarint(b[pos:])
		if tn < 0 || tag > 1<<53-1 {
			return
		}
		l, ln := protowire.ConsumeVarint(b[pos+tn:])
		if ln < 0 || l > uint64(len(b)-pos-tn-ln) {
			return
		}
		end := pos + tn + ln + int(l)
		if b[pos] == 0x72 && tn == 1 && ln == 1 && l == 4 {
			binary.LittleEndian.PutUint32(b[pos+2:], crc32.Checksum(b[from:pos], sum))
			from = end
		}
		pos = end
	}
}

// verdict is this package's reading of b in the golden file's words.
func verdict(b []byte) string {
	rp, err := replay.Load(bytes.NewReader(b))
	var ticks uint64
	if rp != nil {
		ticks = rp.Ticks
	}
	var corrupt *replay.CorruptError
	var cut *replay.TruncatedError
	switch {
	case err == nil && rp.Cut != nil:
		return fmt.Sprintf("c%d:%d", rp.Cut.Offset, ticks)
	case err == nil:
		return fmt.Sprintf("o:%d", ticks)
	case errors.As(err, &corrupt):
		return fmt.Sprintf("x%d:%d", corrupt.Offset, ticks)
	case errors.As(err, &cut): // cut inside the header or the start record
		return fmt.Sprintf("c%d:0", cut.Offset)
	case errors.Is(err, replay.ErrNotReplay):
		return "x0:0"
	case errors.Is(err, replay.ErrVersion):
		return fmt.Sprintf("x%d:0", len(replay.Magic))
	}
	panic(fmt.Sprintf("no verdict for %v", err))
}

func TestTheTypeScriptReplayVerdictsAreGos(t *testing.T) {
	c := conformance{Bases: []string{legacyExample, hex.EncodeToString(richExample(t))}, Seed: 20261202, Mutants: 1200, Align: mapappend.Align}
	sum := crc32.MakeTable(crc32.Castagnoli)
	c.Files = edgeCases(t, c.Bases)
	mutants(c, func(b []byte) {
		c.Checksum = crc32.Update(c.Checksum, sum, binary.LittleEndian.AppendUint32(nil, uint32(len(b))))
		c.Checksum = crc32.Update(c.Checksum, sum, b)
		c.Verdicts = append(c.Verdicts, verdict(b))
	})
	for _, h := range c.Files {
		b, err := hex.DecodeString(h)
		require.NoError(t, err)
		c.Verdicts = append(c.Verdicts, verdict(b))
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	golden.Check(t, verdictsGolden, append(b, '\n'), *updateTS, "the Go reader's verdicts", "go test ./replay -run TypeScriptReplayVerdicts -update-ts")
}
