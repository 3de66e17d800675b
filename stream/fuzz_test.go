package stream_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// FuzzSplitRecord walks any bytes as concatenated records, as a spectator client does.
func FuzzSplitRecord(f *testing.F) {
	f.Add(stream.AppendIdle(nil, 40))
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			n, err := stream.SplitRecord(b)
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

// FuzzPacked decodes any bytes as a packed frame right after a 2-player Start record.
// Whatever the Unpacker accepts, the Packer must code back to a record that unpacks the
// same.
func FuzzPacked(f *testing.F) {
	f.Add([]byte{0x02, 0x02, 0x04, 0x22, 0x02, 0x08, 0x02})
	f.Add([]byte{0x01, 0x02, 0x00, 0x01, 0x04, 0x00, 0x02, 0x03, 0x01, 0x02})
	f.Add([]byte{0x01, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, err := stream.AppendRecord(nil, &pb.ServerMessage{Msg: &pb.ServerMessage_Packed{Packed: body}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := unpackAfterStart(rec)
		if err != nil {
			return
		}
		p := stream.NewPacker(2)
		again, err := unpackAfterStart(p.AppendPacked(nil, got))
		if err != nil {
			t.Fatalf("the Packer's coding of %v does not unpack: %v", got, err)
		}
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("unpacked %v, packed it, unpacked %v", got, again)
		}
	})
}

// unpackAfterStart decodes rec, one record, as the first tick record after the Start
// of a 2-player match, and returns the frame it holds.
func unpackAfterStart(rec []byte) (lockstep.Frame, error) {
	var u stream.Unpacker
	start := &pb.ServerMessage{Msg: &pb.ServerMessage_Start{Start: &pb.Start{Players: []*pb.Player{{Id: 1}, {Id: 2}}}}}
	if err := u.Expand(start); err != nil {
		return lockstep.Frame{}, err
	}
	n, err := stream.SplitRecord(rec)
	if err != nil {
		return lockstep.Frame{}, err
	}
	var msg pb.ServerMessage
	if err := stream.DecodeRecord(rec[:n], &msg); err != nil {
		return lockstep.Frame{}, err
	}
	if err := u.Expand(&msg); err != nil {
		return lockstep.Frame{}, err
	}
	if msg.GetFrame() == nil {
		return lockstep.Frame{}, fmt.Errorf("a %s record, not a frame", stream.RecordName(&msg))
	}
	return stream.FrameOf(msg.GetFrame(), nil), nil
}

// FuzzDecodeRecord decodes any bytes as one record. Whatever it accepts, the message
// encoded again must be accepted and decode to the same message: the wire rule (wire.go)
// never refuses what protobuf itself writes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(stream.AppendIdle(nil, 40))
	f.Add([]byte{0x0a, 0x0a, 0x08, 0x25, 0x12, 0x06, 0x08, 0x02, 0x10, 0x01, 0x22, 0x00})
	f.Add([]byte{0x62, 0x08, 0x08, 0x01, 0x1a, 0x02, 0x01, 0x02, 0x18, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		var msg pb.ServerMessage
		if stream.DecodeRecord(b, &msg) != nil {
			return
		}
		again, err := proto.Marshal(&msg)
		if err != nil {
			t.Fatal(err)
		}
		var back pb.ServerMessage
		if err := stream.DecodeRecord(again, &back); err != nil {
			t.Fatalf("accepted %x, refused its own encoding %x: %v", b, again, err)
		}
		if !proto.Equal(&msg, &back) {
			t.Fatalf("%x decodes to %v, encoded again to %v", b, &msg, &back)
		}
	})
}

// FuzzWalker walks any bytes: it never panics, its records are back to back from the
// start, and it stops exactly where SplitRecord first fails (WholePrefix).
func FuzzWalker(f *testing.F) {
	f.Add(append(stream.AppendIdle(nil, 40), stream.AppendIdle(nil, 80)...))
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		w := stream.NewWalker(b)
		at := 0
		for w.Next() {
			if w.Offset() != at || len(w.Record()) == 0 {
				t.Fatalf("a record at %d (%d bytes), expected at %d", w.Offset(), len(w.Record()), at)
			}
			at += len(w.Record())
			if w.End() != at {
				t.Fatalf("the record ends at %d, End says %d", at, w.End())
			}
			if len(w.Rest()) != len(b)-at {
				t.Fatalf("rest %d bytes after %d of %d", len(w.Rest()), at, len(b))
			}
		}
		if w.Offset() != at || stream.WholePrefix(b) != at {
			t.Fatalf("stopped at %d, walked %d, WholePrefix %d", w.Offset(), at, stream.WholePrefix(b))
		}
		if at < len(b) {
			if _, err := stream.SplitRecord(b[at:]); err == nil {
				t.Fatalf("stopped at %d though a whole record starts there", at)
			}
		}
		if (w.Err() == nil) != (at == len(b)) || stream.Whole(b) != (at == len(b)) {
			t.Fatalf("err %v at %d of %d", w.Err(), at, len(b))
		}
	})
}
