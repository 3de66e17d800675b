package dgram

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	require.NoError(t, DecodeFrames(d, func(f *pb.Frame) error { out = append(out, f.GetTick()); return nil }))
	return out
}

func TestADatagramCarriesTheNewestFramesOldestFirst(t *testing.T) {
	var b Bundler
	assert.Empty(t, b.Append(nil, Budget), "nothing held, nothing sent")
	b.Add(frameRec(0, 0))
	assert.Equal(t, []uint64{0}, ticks(t, b.Append(nil, Budget)))
	for tick := uint64(1); tick < 10; tick++ {
		b.Add(frameRec(tick, 3))
	}
	assert.Equal(t, []uint64{6, 7, 8, 9}, ticks(t, b.Append(nil, Budget)), "the last MaxBundle frames")
	b.Reset()
	assert.Empty(t, b.Append(nil, Budget))
}

func TestABundleKeepsUnderItsBudgetDroppingTheOldestFirst(t *testing.T) {
	var b Bundler
	for tick := uint64(1); tick <= 4; tick++ {
		b.Add(frameRec(tick, 400))
	}
	d := b.Append(nil, Budget)
	assert.LessOrEqual(t, len(d), Budget)
	assert.Equal(t, []uint64{3, 4}, ticks(t, d))
	b.Add(frameRec(5, 2*Budget))
	assert.Empty(t, b.Append(nil, Budget), "a frame larger than the budget goes by the stream alone")
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
		buf = b.Append(buf[:0], Budget)
	})
	assert.Zero(t, allocs)
}

func TestDecodeFramesRefusesWhatItDoesNotWrite(t *testing.T) {
	ack := stream.AppendAck(nil, &pb.CommandAck{Seq: 1})
	for name, d := range map[string][]byte{
		"empty":            nil,
		"another kind":     append([]byte{KindCommand}, frameRec(1, 0)...),
		"not a frame":      append([]byte{KindFrames}, ack...),
		"truncated":        append([]byte{KindFrames}, frameRec(1, 10)[:5]...),
		"out of order":     append(append([]byte{KindFrames}, frameRec(2, 0)...), frameRec(1, 0)...),
		"more than bundle": append(append(append(append(append([]byte{KindFrames}, frameRec(1, 0)...), frameRec(2, 0)...), frameRec(3, 0)...), frameRec(4, 0)...), frameRec(5, 0)...),
	} {
		err := DecodeFrames(d, func(*pb.Frame) error { return nil })
		assert.True(t, errors.Is(err, ErrMalformed), "%s: %v", name, err)
	}
}

func TestACommandDatagramRoundTripsAndIsBounded(t *testing.T) {
	d, err := AppendCommand(nil, &pb.Command{Seq: 7, Tick: 90, Payload: []byte("go")})
	require.NoError(t, err)
	c, err := DecodeCommand(d, 100)
	require.NoError(t, err)
	assert.Equal(t, uint32(7), c.GetSeq())
	assert.Equal(t, uint64(90), c.GetTick())
	assert.Equal(t, []byte("go"), c.GetPayload())
	_, err = DecodeCommand(d, len(d)-1)
	assert.ErrorIs(t, err, ErrMalformed)
	ping, _ := AppendCommand(nil, &pb.Command{})
	ping[0] = KindFrames
	_, err = DecodeCommand(ping, 100)
	assert.ErrorIs(t, err, ErrMalformed)
	_, err = DecodeCommand([]byte{KindCommand, 0xff}, 100)
	assert.ErrorIs(t, err, ErrMalformed)
}

func FuzzDecodeFrames(f *testing.F) {
	var b Bundler
	for tick := uint64(1); tick <= 5; tick++ {
		b.Add(frameRec(tick, int(tick)))
	}
	f.Add(b.Append(nil, Budget))
	f.Add([]byte{KindFrames})
	f.Fuzz(func(t *testing.T, d []byte) {
		var last uint64
		n := 0
		err := DecodeFrames(d, func(fr *pb.Frame) error {
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

func FuzzDecodeCommand(f *testing.F) {
	d, _ := AppendCommand(nil, &pb.Command{Seq: 1, Tick: 2, Payload: []byte{3}})
	f.Add(d)
	f.Fuzz(func(t *testing.T, d []byte) {
		c, err := DecodeCommand(d, 256)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if c == nil || len(d) > 256 {
			t.Fatalf("accepted %d bytes as %v", len(d), c)
		}
	})
}
