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
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/mapappend"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
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
	Checksum uint32   `json:"checksum"`
	Verdicts []string `json:"verdicts"`
}

// richExample is a version 3 file of several blocks: 3 players, packed frames, idle
// runs, checkpoints, a desync, lobby events and the end index.
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
	}
	require.NoError(t, w.Close(&pb.End{Reason: pb.End_REASON_ALL_LEFT}))
	return file.Bytes()
}

// mutants makes the files the verdicts are of, from each base: every prefix, whole and
// padded with a reserved tail; every prefix whose last byte is zeroed (where a killed
// relay's last append starts), whole and padded (to the multiple, and one past it); and
// c.Mutants copies with 1 to 4 random edits (a byte set, deleted, inserted or zeroed, or
// the file cut), a third of them padded. The random numbers are xorshift32 from c.Seed;
// client/ts/test/replay.test.ts makes the same files in the same order.
func mutants(c conformance, each func([]byte)) {
	x := c.Seed
	next := func() int {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return int(x)
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
				at := next() % len(b)
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
			if i%3 == 0 {
				b = pad(b, 0)
			}
			each(b)
		}
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
	mutants(c, func(b []byte) {
		c.Checksum = crc32.Update(c.Checksum, sum, binary.LittleEndian.AppendUint32(nil, uint32(len(b))))
		c.Checksum = crc32.Update(c.Checksum, sum, b)
		c.Verdicts = append(c.Verdicts, verdict(b))
	})
	b, err := json.Marshal(c)
	require.NoError(t, err)
	b = append(b, '\n')
	if *updateTS {
		require.NoError(t, os.WriteFile(verdictsGolden, b, 0o644))
	}
	want, err := os.ReadFile(verdictsGolden)
	require.NoError(t, err, "run go test ./replay -run TypeScriptReplayVerdicts -update-ts")
	assert.Equal(t, string(want), string(b), "the Go reader's verdicts changed: run go test ./replay -run TypeScriptReplayVerdicts -update-ts, and make the TypeScript reader follow")
}
