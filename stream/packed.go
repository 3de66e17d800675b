// The packed frame: the dense coding of a tick with commands in spectator streams and
// replay files. Its tick is implied (the one after the previous tick record) and each
// command's seq is a delta from the same player's previous one, so a tick with one
// 8-byte command costs 13 bytes instead of a Frame's 22.

package stream

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// seqBases holds, per player id (1..players, so len = players+1), the seq a packed
// command's delta is taken from: the seq of the player's last command since the stream's
// last frame or idle record (that frame's own commands included), else 0. So a reader
// may start at a frame or idle record.
type seqBases []uint32

func (b seqBases) reset() { clear(b) }

// moveOn sets the base of each of f's players to its last seq in f.
func (b seqBases) moveOn(f lockstep.Frame) {
	for _, c := range f.Commands {
		b[c.Player] = c.Seq
	}
}

// seqDelta is command i's seq, zigzag-coded against its base: the previous command's seq
// when that is the same player's (commands come in (player, seq) order), else the
// player's base.
func seqDelta(f lockstep.Frame, i int, bases seqBases) uint64 {
	c := &f.Commands[i]
	base := bases[c.Player]
	if i > 0 && f.Commands[i-1].Player == c.Player {
		base = f.Commands[i-1].Seq
	}
	return protowire.EncodeZigZag(int64(c.Seq) - int64(base))
}

// Packer codes the tick records of one stream as it is written: whole Frame and idle
// records where a reader may start, packed records elsewhere. It keeps the seq bases the
// packed records are coded against. The zero value is not ready: use NewPacker.
type Packer struct {
	bases seqBases
}

// NewPacker returns a Packer for a match of players players (ids 1..players).
func NewPacker(players int) Packer { return Packer{bases: make(seqBases, players+1)} }

// Players returns the number of players the Packer codes commands for.
func (p *Packer) Players() uint32 { return uint32(len(p.bases) - 1) }

// AppendFrame appends f as a whole Frame record (see AppendFrame), one a reader may
// start at, and takes the seq bases from it.
func (p *Packer) AppendFrame(dst []byte, f lockstep.Frame) []byte {
	dst = AppendFrame(dst, f)
	p.bases.reset()
	p.bases.moveOn(f)
	return dst
}

// AppendIdle appends an idle record (see AppendIdle), one a reader may start at, and
// resets the seq bases.
func (p *Packer) AppendIdle(dst []byte, through uint64) []byte {
	p.bases.reset()
	return AppendIdle(dst, through)
}

// AppendPacked appends f, canonical and from players 1..Players(), as one
// ServerMessage{packed} record, and moves the seq bases on. Its tick is implied: the
// one after the previous tick record.
func (p *Packer) AppendPacked(dst []byte, f lockstep.Frame) []byte {
	bases := p.bases
	body := 0
	for i, c := range f.Commands {
		body += protowire.SizeVarint(uint64(c.Player)) + protowire.SizeVarint(seqDelta(f, i, bases)) + protowire.SizeBytes(len(c.Payload))
	}
	dst = protowire.AppendTag(dst, fieldPacked, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(body))
	for i, c := range f.Commands {
		dst = protowire.AppendVarint(dst, uint64(c.Player))
		dst = protowire.AppendVarint(dst, seqDelta(f, i, bases))
		dst = protowire.AppendBytes(dst, c.Payload)
	}
	bases.moveOn(f)
	return dst
}

// Unpacker follows the tick records of one stream, in order, and turns its packed
// records back into Frames. Readers of a stream (replay.Reader, the client) run every record
// through Expand and so only ever see frames and idle records.
type Unpacker struct {
	next    uint64 // the tick of the next packed record
	known   bool   // next and the bases are known: the stream was followed from a start, frame or idle record
	players uint32 // from Start; 0 before it
	bases   seqBases
}

// Next returns the tick after those the records followed so far cover: the tick of the
// next packed frame.
func (u *Unpacker) Next() uint64 { return u.next }

// Expand updates the stream position from msg and, if msg is a packed record, replaces
// its content with the Frame it codes. It fails for a packed record it cannot place (no
// start, frame or idle record before it) or whose bytes break the coding; msg is left
// as it was then.
func (u *Unpacker) Expand(msg *pb.ServerMessage) error {
	switch m := msg.GetMsg().(type) {
	case *pb.ServerMessage_Start:
		u.players = uint32(len(m.Start.GetPlayers()))
		u.bases = make(seqBases, u.players+1)
		u.next, u.known = 0, true
	case *pb.ServerMessage_Frame:
		u.next, u.known = m.Frame.GetTick()+1, true
		u.bases.reset()
		for _, c := range m.Frame.GetCommands() {
			if p := c.GetPlayer(); p > 0 && p <= u.players { // others: the Reader says what is wrong
				u.bases[p] = c.GetSeq()
			}
		}
	case *pb.ServerMessage_Idle:
		u.next, u.known = m.Idle.GetThroughTick()+1, true
		u.bases.reset()
	case *pb.ServerMessage_Packed:
		if !u.known || u.players == 0 {
			return fmt.Errorf("%w: no start, frame or idle record before it to give its tick", ErrPacked)
		}
		f, err := u.unpack(m.Packed)
		if err != nil {
			return fmt.Errorf("%w for tick %d: %w", ErrPacked, u.next, err)
		}
		msg.Msg = &pb.ServerMessage_Frame{Frame: f}
		u.next++
	}
	return nil
}

func (u *Unpacker) unpack(b []byte) (*pb.Frame, error) {
	// Commands come in canonical (player, seq) order, so a command's base is the previous
	// command's seq when both are the same player's, else the player's base: one pass.
	// The bases move only once the whole record decoded: a bad one changes nothing.
	f := &pb.Frame{Tick: u.next}
	var prev *pb.Command
	for len(b) > 0 {
		i := len(f.Commands)
		player, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, fmt.Errorf("command %d: bad player varint", i)
		}
		b = b[n:]
		if player == 0 || player > uint64(u.players) {
			return nil, fmt.Errorf("command %d is from player %d, the match has players 1..%d", i, player, u.players)
		}
		delta, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, fmt.Errorf("command %d: bad seq varint", i)
		}
		b = b[n:]
		base := int64(u.bases[player])
		if prev != nil && uint64(prev.Player) == player {
			base = int64(prev.Seq)
		}
		seq := base + protowire.DecodeZigZag(delta)
		if seq < 0 || seq > 1<<32-1 {
			return nil, fmt.Errorf("command %d: seq %d is out of range", i, seq)
		}
		if prev != nil && (uint64(prev.Player) > player || (uint64(prev.Player) == player && int64(prev.Seq) >= seq)) {
			return nil, fmt.Errorf("commands are not in (player, seq) order at command %d", i)
		}
		// The payload shares the record's bytes, which proto.Unmarshal copied for msg.
		payload, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, fmt.Errorf("command %d: bad payload", i)
		}
		b = b[n:]
		if len(payload) == 0 {
			payload = nil // as a whole frame reads
		}
		prev = &pb.Command{Player: uint32(player), Seq: uint32(seq), Payload: payload}
		f.Commands = append(f.Commands, prev)
	}
	if len(f.Commands) == 0 {
		return nil, fmt.Errorf("no commands; empty ticks are idle records")
	}
	for _, c := range f.Commands {
		u.bases[c.Player] = c.Seq
	}
	return f, nil
}
