package replay_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
)

// BenchmarkWriterIdleTick: the amortized cost of one empty tick.
func BenchmarkWriterIdleTick(b *testing.B) {
	w, err := replay.NewWriter(io.Discard, testStart(4), &replay.WriterOptions{MaxBytes: 1 << 62})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := w.Frame(lockstep.Frame{Tick: uint64(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterMatchTick: the amortized cost per tick of a 4-bot skirmish match's stream
// (frames, idle runs, checkpoints), encoding and writing to an in-memory sink.
func BenchmarkWriterMatchTick(b *testing.B) {
	rp, err := replay.Load(bytes.NewReader(record(b, 1, 20000)))
	if err != nil {
		b.Fatal(err)
	}
	frames := make([]lockstep.Frame, rp.Ticks)
	for t := range frames {
		frames[t] = rp.FrameAt(uint64(t))
	}
	b.ReportAllocs()
	b.ResetTimer()
	var w *replay.Writer
	for i := 0; i < b.N; i++ {
		t := uint64(i) % rp.Ticks
		if t == 0 {
			if w, err = replay.NewWriter(io.Discard, rp.Start, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Frame(frames[t]); err != nil {
			b.Fatal(err)
		}
		if lockstep.IsCheckpoint(t, 30) {
			if err := w.Checkpoint(t, t); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReadIdleTick: the cost per tick of reading a mostly idle stream (one command
// every 1000 ticks).
func BenchmarkReadIdleTick(b *testing.B) {
	const ticks = 1_000_000
	var buf bytes.Buffer
	w, err := replay.NewWriter(&buf, testStart(4), nil)
	if err != nil {
		b.Fatal(err)
	}
	for t := uint64(0); t < ticks; t++ {
		f := lockstep.Frame{Tick: t}
		if t%1000 == 999 {
			f.Commands = []sim.Command{{Player: 1, Seq: uint32(t), Payload: []byte("12345678")}}
		}
		if err := w.Frame(f); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(&pb.End{}); err != nil {
		b.Fatal(err)
	}
	file := buf.Bytes()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rp, err := replay.Load(bytes.NewReader(file))
		if err != nil || rp.Ticks != ticks {
			b.Fatal(err, rp.Ticks)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/ticks, "ns/tick")
}

// BenchmarkLoadBusyTick: the cost per tick of loading a busy match (a recorded skirmish,
// 4 scripted bots: commands most ticks), every record decoded and held to the wire rule.
func BenchmarkLoadBusyTick(b *testing.B) {
	const ticks = 20_000
	var file bytes.Buffer
	if _, err := scripted.Record(&file, scripted.RecordOptions{Options: scripted.Options{Seed: 1, Players: 4}, Ticks: ticks}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rp, err := replay.Load(bytes.NewReader(file.Bytes()))
		if err != nil || rp.Ticks != ticks {
			b.Fatal(err, rp.Ticks)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/ticks, "ns/tick")
}
