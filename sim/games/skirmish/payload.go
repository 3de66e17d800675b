package skirmish

import (
	"google.golang.org/protobuf/encoding/protowire"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
)

// Field numbers of skirmish.v1.Command and its orders.
const (
	fieldMove   protowire.Number = 1
	fieldAttack protowire.Number = 2
	fieldStop   protowire.Number = 3
	fieldSpawn  protowire.Number = 4

	fieldUnits  protowire.Number = 1 // Move, Attack, Stop
	fieldX      protowire.Number = 2 // Move
	fieldY      protowire.Number = 3 // Move
	fieldTarget protowire.Number = 2 // Attack
	fieldKind   protowire.Number = 1 // Spawn
)

// orderKind is which oneof field a payload set.
type orderKind uint8

const (
	orderNone orderKind = iota
	orderMove
	orderAttack
	orderStop
	orderSpawn
)

// order is a decoded payload. It is reused: units keeps its capacity between payloads.
type order struct {
	kind   orderKind
	units  []uint32
	x, y   int32
	target uint32
	unit   skirmishv1.Kind
}

// decode parses a skirmish.v1.Command payload into o and reports whether it is a valid
// order. It never allocates once o.units has grown to fit, and never panics.
//
// It accepts what proto.Unmarshal accepts, with these documented strictures: exactly one
// order field must be present (proto would merge or let the last one win), a known field
// must have its declared wire type (proto would keep it as an unknown field), a spawn
// kind must be soldier or archer, and an order may list at most 1024 unit ids. Unknown
// fields are skipped, scalars take the last value, and repeated ids may be packed or not,
// as in proto.
func (o *order) decode(b []byte) bool {
	o.kind, o.units, o.x, o.y, o.target, o.unit = orderNone, o.units[:0], 0, 0, 0, 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return false
		}
		b = b[n:]
		if num < fieldMove || num > fieldSpawn {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		if typ != protowire.BytesType || o.kind != orderNone {
			return false
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		o.kind = orderKind(num) // fieldMove..fieldSpawn map to orderMove..orderSpawn
		if !o.decodeOrder(v) {
			return false
		}
	}
	if o.kind == orderSpawn && o.unit != Soldier && o.unit != Archer {
		return false
	}
	return o.kind != orderNone
}

// decodeOrder parses the fields of the order message o.kind names.
func (o *order) decodeOrder(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return false
		}
		b = b[n:]
		switch {
		case num == fieldUnits && o.kind != orderSpawn:
			n = o.consumeUnits(typ, b)
		case num == fieldKind && o.kind == orderSpawn:
			var v uint64
			v, n = consumeVarint(typ, b)
			o.unit = skirmishv1.Kind(int32(v))
		case num == fieldX && o.kind == orderMove:
			var v uint64
			v, n = consumeVarint(typ, b)
			o.x = int32(v)
		case num == fieldY && o.kind == orderMove:
			var v uint64
			v, n = consumeVarint(typ, b)
			o.y = int32(v)
		case num == fieldTarget && o.kind == orderAttack:
			var v uint64
			v, n = consumeVarint(typ, b)
			o.target = uint32(v)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// consumeVarint reads a varint field value, failing (n < 0) on another wire type.
func consumeVarint(typ protowire.Type, b []byte) (uint64, int) {
	if typ != protowire.VarintType {
		return 0, -1
	}
	return protowire.ConsumeVarint(b)
}

// consumeUnits reads a repeated uint32 field value, packed or not, into o.units.
func (o *order) consumeUnits(typ protowire.Type, b []byte) int {
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		if n < 0 || !o.addUnit(v) {
			return -1
		}
		return n
	case protowire.BytesType:
		p, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return -1
		}
		for len(p) > 0 {
			v, m := protowire.ConsumeVarint(p)
			if m < 0 || !o.addUnit(v) {
				return -1
			}
			p = p[m:]
		}
		return n
	}
	return -1
}

func (o *order) addUnit(v uint64) bool {
	if len(o.units) >= maxOrderUnits {
		return false
	}
	o.units = append(o.units, uint32(v))
	return true
}

// AppendMove appends the payload of a move order to b: the units go to (x, y), in whole
// map units. The bytes equal proto.Marshal of the same skirmishv1.Command.
func AppendMove(b []byte, units []uint32, x, y int32) []byte {
	inner := sizeUnits(units)
	if x != 0 {
		inner += 1 + protowire.SizeVarint(uint64(int64(x)))
	}
	if y != 0 {
		inner += 1 + protowire.SizeVarint(uint64(int64(y)))
	}
	b = protowire.AppendTag(b, fieldMove, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	b = appendUnits(b, units)
	if x != 0 {
		b = protowire.AppendTag(b, fieldX, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(x)))
	}
	if y != 0 {
		b = protowire.AppendTag(b, fieldY, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(y)))
	}
	return b
}

// AppendAttack appends the payload of an attack order on unit target to b.
func AppendAttack(b []byte, units []uint32, target uint32) []byte {
	inner := sizeUnits(units)
	if target != 0 {
		inner += 1 + protowire.SizeVarint(uint64(target))
	}
	b = protowire.AppendTag(b, fieldAttack, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	b = appendUnits(b, units)
	if target != 0 {
		b = protowire.AppendTag(b, fieldTarget, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(target))
	}
	return b
}

// AppendStop appends the payload of a stop order to b.
func AppendStop(b []byte, units []uint32) []byte {
	b = protowire.AppendTag(b, fieldStop, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeUnits(units)))
	return appendUnits(b, units)
}

// AppendSpawn appends the payload of a spawn order for kind k to b.
func AppendSpawn(b []byte, k skirmishv1.Kind) []byte {
	inner := 0
	if k != 0 {
		inner = 1 + protowire.SizeVarint(uint64(int64(k)))
	}
	b = protowire.AppendTag(b, fieldSpawn, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	if k != 0 {
		b = protowire.AppendTag(b, fieldKind, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(k)))
	}
	return b
}

func packedSize(units []uint32) int {
	n := 0
	for _, u := range units {
		n += protowire.SizeVarint(uint64(u))
	}
	return n
}

func sizeUnits(units []uint32) int {
	if len(units) == 0 {
		return 0
	}
	n := packedSize(units)
	return 1 + protowire.SizeVarint(uint64(n)) + n
}

func appendUnits(b []byte, units []uint32) []byte {
	if len(units) == 0 {
		return b
	}
	b = protowire.AppendTag(b, fieldUnits, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(packedSize(units)))
	for _, u := range units {
		b = protowire.AppendVarint(b, uint64(u))
	}
	return b
}

// RandomPayload returns a well-formed order drawn with intn (which returns a number in
// [0, n)): a move, attack, stop or spawn naming 1 to 4 of the first 8*DefaultStartUnits
// unit ids (some another player's, some dead or never born) and coordinates a little
// beyond the default map. It is what a conformance check (package sim/check/simtest) sends
// beside garbage, so that the orders' own paths are held to it too.
func RandomPayload(intn func(n int) int) []byte {
	units := make([]uint32, 1+intn(4))
	for i := range units {
		units[i] = uint32(1 + intn(8*DefaultStartUnits))
	}
	coord := func() int32 { return int32(intn(DefaultMapSize+16)) - 8 }
	switch intn(4) {
	case 0:
		return AppendMove(nil, units, coord(), coord())
	case 1:
		return AppendAttack(nil, units, uint32(1+intn(8*DefaultStartUnits)))
	case 2:
		return AppendStop(nil, units)
	}
	return AppendSpawn(nil, skirmishv1.Kind(1+intn(2)))
}
