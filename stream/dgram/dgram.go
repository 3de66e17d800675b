package dgram

import (
	"encoding/binary"
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
	KindPing    byte = 3
)

// MaxBundle is how many frames one datagram carries at most: the newest and the three
// before it, so up to three lost datagrams in a row cost a player nothing.
const MaxBundle = 4

// MaxCommands is how many commands one command datagram carries at most: a player's
// oldest unacknowledged ones, so that a command is resent with the next until the relay
// says it has it.
const MaxCommands = 8

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

// Append appends a frames datagram to dst: acked (the highest seq of its player's
// commands the relay has, 0 for none), then the newest frames that fit budget bytes,
// oldest first. It returns dst unchanged when not even the newest fits (or none is
// held): that frame goes by the stream alone.
func (b *Bundler) Append(dst []byte, acked uint32, budget int) []byte {
	size, k := 1+uvarintLen(uint64(acked)), 0
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
	dst = binary.AppendUvarint(dst, uint64(acked))
	for i := k - 1; i >= 0; i-- {
		dst = append(dst, b.recs[(b.next-1-i+2*MaxBundle)%MaxBundle]...)
	}
	return dst
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// DecodeFrames calls fn with each frame of a frames datagram, in its order, and returns
// the datagram's acked seq. A datagram that is not one this package writes (another
// kind, an ack over 32 bits or not in its shortest form, a record that is not a frame,
// bytes that are not records, frames out of order) is ErrMalformed, and fn may have seen
// its first frames.
func DecodeFrames(b []byte, fn func(*pb.Frame) error) (acked uint32, err error) {
	if len(b) < 2 || b[0] != KindFrames {
		return 0, fmt.Errorf("%w: not a frames datagram", ErrMalformed)
	}
	a, n := binary.Uvarint(b[1:])
	if n <= 0 || a > 1<<32-1 || n != uvarintLen(a) {
		return 0, fmt.Errorf("%w: no acked seq (a uvarint of 32 bits, in its shortest form)", ErrMalformed)
	}
	if 1+n == len(b) {
		return 0, fmt.Errorf("%w: no frame", ErrMalformed)
	}
	w := stream.NewWalker(b[1+n:])
	var last uint64
	for i := 0; w.Next(); i++ {
		if i == MaxBundle {
			return 0, fmt.Errorf("%w: more than %d frames", ErrMalformed, MaxBundle)
		}
		var msg pb.ServerMessage
		if err := w.Decode(&msg, nil); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		f := msg.GetFrame()
		if f == nil {
			return 0, fmt.Errorf("%w: a record that is not a frame", ErrMalformed)
		}
		if i > 0 && f.GetTick() <= last {
			return 0, fmt.Errorf("%w: frame %d after frame %d", ErrMalformed, f.GetTick(), last)
		}
		last = f.GetTick()
		if err := fn(f); err != nil {
			return 0, err
		}
	}
	if err := w.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return uint32(a), nil
}

// AppendCommands appends a command datagram carrying cmds (at most MaxCommands, in
// ascending seq order) to dst.
func AppendCommands(dst []byte, cmds ...*pb.Command) ([]byte, error) {
	if len(cmds) == 0 || len(cmds) > MaxCommands {
		return dst, fmt.Errorf("dgram: %d commands; a datagram carries 1 to %d", len(cmds), MaxCommands)
	}
	dst = append(dst, KindCommand)
	for _, c := range cmds {
		msg := &pb.ClientMessage{Msg: &pb.ClientMessage_Command{Command: c}}
		dst = binary.AppendUvarint(dst, uint64(proto.Size(msg)))
		var err error
		if dst, err = (proto.MarshalOptions{}).MarshalAppend(dst, msg); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// DecodeCommands calls fn with each command of a command datagram, in its order. A
// command over max bytes, more than MaxCommands, seqs not ascending or bytes that are
// not commands are ErrMalformed, and fn may have seen the first commands.
func DecodeCommands(b []byte, max int, fn func(*pb.Command)) error {
	if len(b) < 2 || b[0] != KindCommand {
		return fmt.Errorf("%w: not a command datagram", ErrMalformed)
	}
	var last uint32
	for i, rest := 0, b[1:]; len(rest) > 0; i++ {
		if i == MaxCommands {
			return fmt.Errorf("%w: more than %d commands", ErrMalformed, MaxCommands)
		}
		size, n := binary.Uvarint(rest)
		if n <= 0 || n != uvarintLen(size) || size > uint64(len(rest)-n) {
			return fmt.Errorf("%w: a command's length is not one", ErrMalformed)
		}
		if size > uint64(max) {
			return fmt.Errorf("%w: a command of %d bytes, over the limit of %d", ErrMalformed, size, max)
		}
		var msg pb.ClientMessage
		if err := proto.Unmarshal(rest[n:n+int(size)], &msg); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		c := msg.GetCommand()
		if c == nil {
			return fmt.Errorf("%w: a message that is not a command", ErrMalformed)
		}
		if i > 0 && c.GetSeq() <= last {
			return fmt.Errorf("%w: seq %d after seq %d", ErrMalformed, c.GetSeq(), last)
		}
		last = c.GetSeq()
		fn(c)
		rest = rest[n+int(size):]
	}
	return nil
}

// AppendPing appends a ping datagram carrying nonce to dst: a client's, timing the
// datagrams' round trip, or the relay's echo of it (the same bytes).
func AppendPing(dst []byte, nonce uint64) []byte {
	return binary.AppendUvarint(append(dst, KindPing), nonce)
}

// DecodePing reads a ping datagram's nonce.
func DecodePing(b []byte) (uint64, error) {
	if len(b) < 2 || b[0] != KindPing {
		return 0, fmt.Errorf("%w: not a ping datagram", ErrMalformed)
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || 1+k != len(b) || k != uvarintLen(n) {
		return 0, fmt.Errorf("%w: a ping's nonce is not one", ErrMalformed)
	}
	return n, nil
}
