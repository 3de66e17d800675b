package replay_test

import (
	"bytes"
	"fmt"
	"testing"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
)

// FuzzLoad feeds any bytes to the reader: it must return a replay or an error, never panic,
// and a replay that loads must survive re-simulation.
func FuzzLoad(f *testing.F) {
	file := record(f, 1, 200)
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add(replay.Magic[:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := replay.Load(bytes.NewReader(b))
		if err != nil || rp.Ticks > 5000 {
			return
		}
		_, _ = replay.Verify(rp, replay.VerifyOptions{})
		_ = replay.Summarize(rp)
	})
}

// FuzzSplitRecord walks any bytes as concatenated records, as a spectator client does.
func FuzzSplitRecord(f *testing.F) {
	f.Add(replay.AppendIdle(nil, 40))
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			n, err := replay.SplitRecord(b)
			if err != nil {
				return
			}
			if n <= 0 || n > len(b) {
				t.Fatalf("SplitRecord returned %d for %d bytes", n, len(b))
			}
			b = b[n:]
		}
	})
}

// FuzzPacked decodes any bytes as a packed frame right after the Start record. Whatever
// the reader accepts, the writer must code back to a record that reads the same.
func FuzzPacked(f *testing.F) {
	f.Add([]byte{0x02, 0x02, 0x04, 0x22, 0x02, 0x08, 0x02})
	f.Add([]byte{0x01, 0x02, 0x00, 0x01, 0x04, 0x00, 0x02, 0x03, 0x01, 0x02})
	f.Add([]byte{0x01, 0x80})
	head := func() ([]byte, *replay.Writer, *bytes.Buffer) {
		var buf bytes.Buffer
		w, err := replay.NewWriter(&buf, testStart(2), nil)
		if err != nil {
			f.Fatal(err)
		}
		return buf.Bytes(), w, &buf
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		file, _, _ := head()
		rec, err := replay.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Packed{Packed: body}})
		if err != nil {
			t.Fatal(err)
		}
		rp, err := replay.Load(bytes.NewReader(append(file, rec...)))
		if err != nil || len(rp.Frames) != 1 {
			return
		}
		_, w, buf := head()
		if err := w.Frame(rp.Frames[0]); err != nil {
			t.Fatal(err)
		}
		again, err := replay.Load(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("the writer's coding of %v does not read: %v", rp.Frames[0], err)
		}
		if len(again.Frames) != 1 || fmt.Sprint(again.Frames[0]) != fmt.Sprint(rp.Frames[0]) {
			t.Fatalf("read %v, wrote it, read back %v", rp.Frames, again.Frames)
		}
	})
}
