package dgram

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// Kinds of datagram: the first byte.
const (
	KindFrames  byte = 1
	KindCommand byte = 2
)

// MaxBundle is how many frames one datagram carries at most: the newest and the three
// before it, so up to three lost datagrams in a row cost a player nothing.
const MaxBundle = 4

// Budget is the size a frames datagram keeps under: QUIC's smallest path MTU (1200
// bytes) less its own and WebTransport's headers, with room to spare.
const Budget = 1100

var (
	// ErrMalformed: the datagram is not one this package writes.
	ErrMalformed = errors.New("dgram: malformed datagram")
)

// Bundler keeps the records of the last MaxBundle frames and builds frames datagrams;
// warm, it allocates nothing. Not safe for concurrent use (the match's actor owns it).
type Bundler struct {
	recs [MaxBundle][]byte // a ring: recs[(next-1)%MaxBundle] is the newest
	n    int               // how many are held
	next int
}

// Add keeps a copy of rec, one frame's stream record, as the newest.
func (b *Bundler) Add(rec []byte) {
	b.recs[b.next] = append(b.recs[b.next][:0], rec...)
	b.next = (b.next + 1) % MaxBundle
	b.n = min(b.n+1, MaxBundle)
}

// Reset forgets every frame (a new match, or a gap in the ticks).
func (b *Bundler) Reset() { b.n, b.next = 0, 0 }

// Append appends a frames datagram to dst: the newest frames that fit budget bytes,
// oldest first. It returns dst unchanged when not even the newest fits (or none is
// held): that frame goes by the stream alone.
func (b *Bundler) Append(dst []byte, budget int) []byte {
	size, k := 1, 0
	for k < b.n {
		r := b.recs[(b.next-1-k+2*MaxBundle)%MaxBundle]
		if size+len(r) > budget {
			break
		}
		size += len(r)
		k++
	}
	if k == 0 {
		return dst
	}
	dst = append(dst, KindFrames)
	for i := k - 1; i >= 0; i-- {
		dst = append(dst, b.recs[(b.next-1-i+2*MaxBundle)%MaxBundle]...)
	}
	return dst
}

// DecodeFrames calls fn with each frame of a frames datagram, in its order. A datagram
// that is not one (another kind, a record that is not a frame, bytes that are not
// records, frames out of order) is ErrMalformed, and fn may have seen its first frames.
func DecodeFrames(b []byte, fn func(*pb.Frame) error) error {
	if len(b) < 2 || b[0] != KindFrames {
		return fmt.Errorf("%w: not a frames datagram", ErrMalformed)
	}
	w := stream.NewWalker(b[1:])
	var last uint64
	for i := 0; w.Next(); i++ {
		if i == MaxBundle {
			return fmt.Errorf("%w: more than %d frames", ErrMalformed, MaxBundle)
		}
		var msg pb.ServerMessage
		if err := w.Decode(&msg, nil); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		f := msg.GetFrame()
		if f == nil {
			return fmt.Errorf("%w: a record that is not a frame", ErrMalformed)
		}
		if i > 0 && f.GetTick() <= last {
			return fmt.Errorf("%w: frame %d after frame %d", ErrMalformed, f.GetTick(), last)
		}
		last = f.GetTick()
		if err := fn(f); err != nil {
			return err
		}
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// AppendCommand appends a command datagram carrying c to dst.
func AppendCommand(dst []byte, c *pb.Command) ([]byte, error) {
	dst = append(dst, KindCommand)
	return proto.MarshalOptions{}.MarshalAppend(dst, &pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: c}})
}

// DecodeCommand reads a command datagram of at most max bytes.
func DecodeCommand(b []byte, max int) (*pb.Command, error) {
	if len(b) > max {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrMalformed, len(b), max)
	}
	if len(b) < 1 || b[0] != KindCommand {
		return nil, fmt.Errorf("%w: not a command datagram", ErrMalformed)
	}
	var msg pb.ClientMessage
	if err := proto.Unmarshal(b[1:], &msg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	c := msg.GetCommand()
	if c == nil {
		return nil, fmt.Errorf("%w: a message that is not a command", ErrMalformed)
	}
	return c, nil
}
