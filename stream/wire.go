// The wire rule every record is held to before it is decoded: each field it knows has
// the wire type its schema gives, at every depth.

package stream

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

// A record is damaged, not merely from a newer writer, where a field this build knows
// arrives with another wire type than the schema gives it: protobuf lets a schema add
// fields, never change one's type (repeated scalars excepted, which may come packed or
// not). Decoders differ there: protobuf-go keeps such a field as an unknown one and reads
// the message without it, protobuf-es reads its bytes as the declared type; so the Go and
// TypeScript readers of one file would read different matches. Both reject it instead
// (client/ts/src/wire.ts is this rule in TypeScript). Groups (wire types 3 and 4) are
// rejected as well: no message of this format has one, and a reader need not skip them;
// so is a tag longer than any protobuf writes, which only one of the two libraries reads.

// maxTagLen is the longest tag protobuf writes (a field number below 2^29 and its wire
// type take 32 bits). protobuf-es refuses a longer one, protobuf-go reads it.
const maxTagLen = 5

// wireField is what a message's field with some number must look like on the wire.
type wireField struct {
	known  bool
	typ    protowire.Type
	packed bool       // a repeated scalar: it may also come as one length-delimited run
	msg    *wireRules // a message-typed field's own rules
}

// wireRules are a message type's fields, indexed by number (the schema's numbers are
// small: a field past the end is unknown).
type wireRules struct{ fields []wireField }

// recordRules are ServerMessage's, and through it every message a record can hold.
var recordRules = rulesOf((&pb.ServerMessage{}).ProtoReflect().Descriptor(), map[protoreflect.FullName]*wireRules{})

func rulesOf(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*wireRules) *wireRules {
	if r, ok := seen[md.FullName()]; ok {
		return r
	}
	r := &wireRules{}
	seen[md.FullName()] = r
	fs := md.Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		n := int(fd.Number())
		if n >= len(r.fields) {
			r.fields = append(r.fields, make([]wireField, n+1-len(r.fields))...)
		}
		f := wireField{known: true, typ: wireTypeOf(fd.Kind())}
		f.packed = fd.IsList() && f.typ != protowire.BytesType
		if fd.Kind() == protoreflect.MessageKind {
			f.msg = rulesOf(fd.Message(), seen)
		}
		r.fields[n] = f
	}
	return r
}

func wireTypeOf(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType // the integer kinds, bool, enum
}

// checkWire holds b, the encoding of a message with rules r, to the wire rule.
func checkWire(r *wireRules, b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if n > maxTagLen {
			return fmt.Errorf("field %d's tag is %d bytes long: protobuf writes at most %d", num, n, maxTagLen)
		}
		if num > protowire.MaxValidNumber {
			return fmt.Errorf("field number %d is past protobuf's largest, %d", num, protowire.MaxValidNumber)
		}
		b = b[n:]
		if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return fmt.Errorf("field %d is a group (wire type %d): this format has none", num, typ)
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		if int(num) < len(r.fields) && r.fields[num].known {
			f := &r.fields[num]
			switch {
			case typ == f.typ:
				if f.msg != nil {
					v, _ := protowire.ConsumeBytes(b)
					if err := checkWire(f.msg, v); err != nil {
						return fmt.Errorf("in field %d: %w", num, err)
					}
				}
			case f.packed && typ == protowire.BytesType:
				v, _ := protowire.ConsumeBytes(b)
				if err := checkPacked(f.typ, v); err != nil {
					return fmt.Errorf("field %d (packed): %w", num, err)
				}
			default:
				return fmt.Errorf("field %d has wire type %d, its schema's is %d", num, typ, f.typ)
			}
		}
		b = b[m:]
	}
	return nil
}

// checkPacked holds a packed run of values of wire type typ to whole values.
func checkPacked(typ protowire.Type, b []byte) error {
	for len(b) > 0 {
		n := protowire.ConsumeFieldValue(1, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}
