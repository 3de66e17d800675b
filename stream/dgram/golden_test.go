package dgram

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/internal/testkit/golden"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

var updateTS = flag.Bool("update-ts", false, "rewrite the TypeScript client's datagram cases from this package's encoder")

// datagramGolden is what the TypeScript client's decoder is tested against.
const datagramGolden = "../../client/ts/test/testdata/dgram.json"

type goldenCommand struct {
	Player  uint32 `json:"player"`
	Seq     uint32 `json:"seq"`
	Payload string `json:"payload"` // hex
}

type goldenFrame struct {
	Tick     uint64          `json:"tick"`
	Commands []goldenCommand `json:"commands"`
}

// goldenCase is one datagram: its bytes (hex) and, unless it is malformed, its frames.
type goldenCase struct {
	Name      string        `json:"name"`
	Datagram  string        `json:"datagram"`
	Malformed bool          `json:"malformed"`
	Acked     uint32        `json:"acked"`
	Frames    []goldenFrame `json:"frames"`
}

func goldenFrames(ticks ...uint64) []lockstep.Frame {
	var out []lockstep.Frame
	for _, t := range ticks {
		f := lockstep.Frame{Tick: t}
		for p := uint32(1); p <= uint32(t%3); p++ {
			f.Commands = append(f.Commands, sim.Command{Player: p, Seq: uint32(t) * 7, Payload: []byte{byte(t), byte(p), 0xff}})
		}
		out = append(out, f)
	}
	return out
}

func bundle(fs []lockstep.Frame) []byte {
	var b Bundler
	for _, f := range fs {
		b.Add(stream.AppendFrame(nil, f))
	}
	return b.Append(nil, uint32(len(fs))*100, Budget)
}

// The Go encoder's datagrams, good and malformed, as the TypeScript decoder must read
// them: each case is decoded here first, so the file says what this package decides.
func TestTheTypeScriptDecoderReadsWhatTheGoEncoderWrites(t *testing.T) {
	var cases []goldenCase
	add := func(name string, d []byte) {
		c := goldenCase{Name: name, Datagram: hex.EncodeToString(d), Frames: []goldenFrame{}}
		acked, err := DecodeFrames(d, func(f *pb.Frame) error {
			g := goldenFrame{Tick: f.GetTick(), Commands: []goldenCommand{}}
			for _, cmd := range f.GetCommands() {
				g.Commands = append(g.Commands, goldenCommand{cmd.GetPlayer(), cmd.GetSeq(), hex.EncodeToString(cmd.GetPayload())})
			}
			c.Frames = append(c.Frames, g)
			return nil
		})
		c.Acked = acked
		if err != nil {
			require.True(t, errors.Is(err, ErrMalformed), "%s: %v", name, err)
			c.Malformed, c.Frames = true, []goldenFrame{}
		}
		cases = append(cases, c)
	}
	one := bundle(goldenFrames(0))
	four := bundle(goldenFrames(1, 2, 3, 4, 5, 6)) // the newest four
	add("one frame", one)
	add("the newest four frames, oldest first", four)
	add("a big tick's frame", bundle(goldenFrames(1<<40+2)))
	add("empty", nil)
	add("the kind byte alone", []byte{KindFrames})
	add("an acked seq and no frame", []byte{KindFrames, 5})
	add("an acked seq over 32 bits", append([]byte{KindFrames, 0x80, 0x80, 0x80, 0x80, 0x10}, one[2:]...))
	add("an acked seq not in its shortest form", append([]byte{KindFrames, 0x80, 0x00}, one[2:]...))
	add("a command datagram's kind", append([]byte{KindCommand}, four[1:]...))
	add("a record cut short", four[:len(four)-1])
	add("five frames", append(append([]byte{}, four...), stream.AppendFrame(nil, lockstep.Frame{Tick: 7})...))
	add("ticks out of order", append(append([]byte{KindFrames, 0}, stream.AppendFrame(nil, goldenFrames(3)[0])...), stream.AppendFrame(nil, goldenFrames(2)[0])...))
	add("the same tick twice", append(append([]byte{}, one...), one[2:]...))
	end, err := stream.AppendRecord([]byte{KindFrames, 0}, &pb.ServerMessage{Msg: &pb.ServerMessage_End{End: &pb.End{LastTick: 3}}})
	require.NoError(t, err)
	add("a record that is not a frame", end)
	add("a record header that is not one", []byte{KindFrames, 0, 0xff, 0xff, 0xff})
	b, err := json.MarshalIndent(cases, "", "  ")
	require.NoError(t, err)
	golden.Check(t, datagramGolden, append(b, '\n'), *updateTS, "the Go encoder's datagrams", "go test ./stream/dgram -run TypeScriptDecoder -update-ts")
}

// The command datagrams the TypeScript client must write: for each case, the
// ClientMessage bytes of its commands and the datagram this package writes for them.
func TestTheTypeScriptEncoderWritesWhatTheGoEncoderWrites(t *testing.T) {
	type commandsCase struct {
		Name     string   `json:"name"`
		Messages []string `json:"messages"`
		Datagram string   `json:"datagram"`
	}
	var cases []commandsCase
	add := func(name string, cmds ...*pb.Command) {
		d, err := AppendCommands(nil, cmds...)
		require.NoError(t, err)
		c := commandsCase{Name: name, Datagram: hex.EncodeToString(d)}
		for _, cmd := range cmds {
			m, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: cmd}})
			require.NoError(t, err)
			c.Messages = append(c.Messages, hex.EncodeToString(m))
		}
		var n int
		require.NoError(t, DecodeCommands(d, 1<<10, func(*pb.Command) { n++ }))
		require.Equal(t, len(cmds), n)
		cases = append(cases, c)
	}
	add("one command", &pb.Command{Seq: 1, Tick: 4, Payload: []byte{1, 2}})
	add("three, the oldest unacked first", &pb.Command{Seq: 7, Tick: 40}, &pb.Command{Seq: 8, Tick: 41, Payload: []byte("go")}, &pb.Command{Seq: 9, Tick: 41})
	add("a command whose length takes two bytes", &pb.Command{Seq: 300, Tick: 1 << 40, Payload: make([]byte, 200)})
	b, err := json.MarshalIndent(cases, "", "  ")
	require.NoError(t, err)
	golden.Check(t, commandsGolden, append(b, '\n'), *updateTS, "the Go encoder's command datagrams", "go test ./stream/dgram -run TypeScript -update-ts")
}

// commandsGolden is what the TypeScript client's command datagrams are tested against.
const commandsGolden = "../../client/ts/test/testdata/dgram-commands.json"
