package dgram

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/stream"
)

func frameRec(tick uint64, payload int) []byte {
	f := lockstep.Frame{Tick: tick}
	if payload > 0 {
		f.Commands = []sim.Command{{Player: 1, Seq: uint32(tick), Payload: make([]byte, payload)}}
	}
	return stream.AppendFrame(nil, f)
}

func ticks(t *testing.T, d []byte) []uint64 {
	t.Helper()
	var out []uint64
	_, err := DecodeFrames(d, func(f *pb.Frame) error { out = append(out, f.GetTick()); return nil })
	require.NoError(t, err)
	return out
}

func TestADatagramCarriesTheNewestFramesOldestFirst(t *testing.T) {
	var b Bundler
	assert.Empty(t, b.Append(nil, 0, Budget), "nothing held, nothing sent")
	b.Add(frameRec(0, 0))
	assert.Equal(t, []uint64{0}, ticks(t, b.Append(nil, 0, Budget)))
	for tick := uint64(1); tick < 10; tick++ {
		b.Add(frameRec(tick, 3))
	}
	assert.Equal(t, []uint64{6, 7, 8, 9}, ticks(t, b.Append(nil, 0, Budget)), "the last MaxBundle frames")
	b.Reset()
	assert.Empty(t, b.Append(nil, 0, Budget))
}

func TestAFramesDatagramSaysWhichCommandsTheRelayHas(t *testing.T) {
	var b Bundler
	b.Add(frameRec(3, 1))
	for _, acked := range []uint32{0, 1, 127, 128, 1<<32 - 1} {
		d := b.Append(nil, acked, Budget)
		got, err := DecodeFrames(d, func(*pb.Frame) error { return nil })
		require.NoError(t, err)
		assert.Equal(t, acked, got)
	}
	d := append([]byte{KindFrames}, 0x80, 0x80, 0x80, 0x80, 0x10) // 1<<32: over 32 bits
	d = append(d, frameRec(3, 1)...)
	_, err := DecodeFrames(d, func(*pb.Frame) error { return nil })
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestABundleKeepsUnderItsBudgetDroppingTheOldestFirst(t *testing.T) {
	var b Bundler
	for tick := uint64(1); tick <= 4; tick++ {
		b.Add(frameRec(tick, 400))
	}
	d := b.Append(nil, 0, Budget)
	assert.LessOrEqual(t, len(d), Budget)
	assert.Equal(t, []uint64{3, 4}, ticks(t, d))
	b.Add(frameRec(5, 2*Budget))
	assert.Empty(t, b.Append(nil, 0, Budget), "a frame larger than the budget goes by the stream alone")
}

func TestAWarmBundlerAllocatesNothing(t *testing.T) {
	var b Bundler
	rec := frameRec(5, 20)
	buf := make([]byte, 0, Budget)
	for range MaxBundle {
		b.Add(rec)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.Add(rec)
		buf = b.Append(buf[:0], 1<<20, Budget)
	})
	assert.Zero(t, allocs)
}

func TestDecodeFramesRefusesWhatItDoesNotWrite(t *testing.T) {
	ack := stream.AppendAck(nil, &pb.CommandAck{Seq: 1})
	for name, d := range map[string][]byte{
		"empty":            nil,
		"another kind":     append([]byte{KindCommand, 0}, frameRec(1, 0)...),
		"no frame":         {KindFrames, 0},
		"not a frame":      append([]byte{KindFrames, 0}, ack...),
		"truncated":        append([]byte{KindFrames, 0}, frameRec(1, 10)[:5]...),
		"out of order":     append(append([]byte{KindFrames, 0}, frameRec(2, 0)...), frameRec(1, 0)...),
		"more than bundle": append(append(append(append(append([]byte{KindFrames, 0}, frameRec(1, 0)...), frameRec(2, 0)...), frameRec(3, 0)...), frameRec(4, 0)...), frameRec(5, 0)...),
	} {
		_, err := DecodeFrames(d, func(*pb.Frame) error { return nil })
		assert.True(t, errors.Is(err, ErrMalformed), "%s: %v", name, err)
	}
}

func TestACommandDatagramRoundTripsAndIsBounded(t *testing.T) {
	d, err := AppendCommands(nil, &pb.Command{Seq: 7, Tick: 90, Payload: []byte("go")}, &pb.Command{Seq: 8, Tick: 91})
	require.NoError(t, err)
	var got []*pb.Command
	require.NoError(t, DecodeCommands(d, 100, func(c *pb.Command) { got = append(got, c) }))
	require.Len(t, got, 2)
	assert.Equal(t, uint32(7), got[0].GetSeq())
	assert.Equal(t, uint64(90), got[0].GetTick())
	assert.Equal(t, []byte("go"), got[0].GetPayload())
	assert.Equal(t, uint32(8), got[1].GetSeq())

	refused := func(name string, d []byte, max int) {
		t.Helper()
		assert.ErrorIs(t, DecodeCommands(d, max, func(*pb.Command) {}), ErrMalformed, name)
	}
	refused("a command over the limit", d, 5)
	other := append([]byte{}, d...)
	other[0] = KindFrames
	refused("another kind", other, 100)
	refused("the kind alone", []byte{KindCommand}, 100)
	refused("a length past the end", []byte{KindCommand, 0x7f, 1}, 100)
	refused("a length not in its shortest form", append([]byte{KindCommand, 0x82, 0x00}, d[2:4]...), 100)
	refused("bytes that are not a message", []byte{KindCommand, 1, 0xff}, 100)
	ping, _ := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Ping{Ping: &pb.Ping{Nonce: 1}}})
	refused("a message that is not a command", append([]byte{KindCommand, byte(len(ping))}, ping...), 100)
	back, _ := AppendCommands(nil, &pb.Command{Seq: 8}, &pb.Command{Seq: 8})
	refused("a seq twice", back, 100)

	var nine []*pb.Command
	for seq := range uint32(MaxCommands + 1) {
		nine = append(nine, &pb.Command{Seq: seq + 1})
	}
	_, err = AppendCommands(nil, nine...)
	assert.Error(t, err, "more than a datagram carries")
	many, _ := AppendCommands(nil, nine[:MaxCommands]...)
	one, _ := AppendCommands(nil, nine[MaxCommands])
	refused("more than MaxCommands", append(many, one[1:]...), 100)
}

func TestAPingDatagramRoundTrips(t *testing.T) {
	for _, n := range []uint64{0, 1, 300, 1<<64 - 1} {
		got, err := DecodePing(AppendPing(nil, n))
		require.NoError(t, err)
		assert.Equal(t, n, got)
	}
	for name, d := range map[string][]byte{
		"empty": nil, "the kind alone": {KindPing}, "another kind": {KindFrames, 1},
		"bytes after the nonce": {KindPing, 1, 2}, "a nonce cut short": {KindPing, 0x80},
	} {
		_, err := DecodePing(d)
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
}

func FuzzDecodePing(f *testing.F) {
	f.Add(AppendPing(nil, 77))
	f.Fuzz(func(t *testing.T, d []byte) {
		n, err := DecodePing(d)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if !bytes.Equal(AppendPing(nil, n), d) {
			t.Fatalf("%x read as nonce %d, which is written %x", d, n, AppendPing(nil, n))
		}
	})
}

func FuzzDecodeFrames(f *testing.F) {
	var b Bundler
	for tick := uint64(1); tick <= 5; tick++ {
		b.Add(frameRec(tick, int(tick)))
	}
	f.Add(b.Append(nil, 0, Budget))
	f.Add([]byte{KindFrames, 0})
	f.Fuzz(func(t *testing.T, d []byte) {
		var last uint64
		n := 0
		_, err := DecodeFrames(d, func(fr *pb.Frame) error {
			if n > 0 && fr.GetTick() <= last {
				t.Fatalf("frame %d after %d", fr.GetTick(), last)
			}
			last, n = fr.GetTick(), n+1
			return nil
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if n > MaxBundle {
			t.Fatalf("%d frames", n)
		}
	})
}

func FuzzDecodeCommands(f *testing.F) {
	d, _ := AppendCommands(nil, &pb.Command{Seq: 1, Tick: 2, Payload: []byte{3}}, &pb.Command{Seq: 2})
	f.Add(d)
	f.Fuzz(func(t *testing.T, d []byte) {
		var seqs []uint32
		err := DecodeCommands(d, 64, func(c *pb.Command) {
			if c == nil || proto.Size(&pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: c}}) > 64 {
				t.Fatalf("accepted %v", c)
			}
			if n := len(seqs); n > 0 && c.GetSeq() <= seqs[n-1] {
				t.Fatalf("seq %d after %d", c.GetSeq(), seqs[n-1])
			}
			seqs = append(seqs, c.GetSeq())
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if len(seqs) > MaxCommands {
			t.Fatalf("%d commands", len(seqs))
		}

	})
}
