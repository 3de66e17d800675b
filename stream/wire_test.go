package stream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

// field appends field num of wire type typ holding v (a varint's value, or bytes).
func field(b []byte, num protowire.Number, typ protowire.Type, v any) []byte {
	b = protowire.AppendTag(b, num, typ)
	switch v := v.(type) {
	case uint64:
		return protowire.AppendVarint(b, v)
	case []byte:
		return protowire.AppendBytes(b, v)
	}
	panic("field: a uint64 or []byte")
}

func TestAKnownFieldOfAnotherWireTypeIsDamage(t *testing.T) {
	// A frame's command whose tick (field 4, a varint) arrives length-delimited:
	// protobuf-go would keep it as an unknown field and protobuf-es read its bytes as the
	// tick, so the Go and TypeScript readers would read two different frames.
	cmd := field(field(field(nil, 1, protowire.VarintType, uint64(2)), 2, protowire.VarintType, uint64(1)), 4, protowire.BytesType, []byte{0x08, 0x01})
	rec := field(nil, 1, protowire.BytesType, field(field(nil, 1, protowire.VarintType, uint64(37)), 2, protowire.BytesType, cmd))
	var msg pb.ServerMessage
	err := stream.DecodeRecord(rec, &msg)
	assert.ErrorIs(t, err, stream.ErrRecord)
	assert.ErrorContains(t, err, "field 4 has wire type 2, its schema's is 0")

	// The same command with its tick a varint is whole.
	cmd = field(field(field(nil, 1, protowire.VarintType, uint64(2)), 2, protowire.VarintType, uint64(1)), 4, protowire.VarintType, uint64(9))
	rec = field(nil, 1, protowire.BytesType, field(field(nil, 1, protowire.VarintType, uint64(37)), 2, protowire.BytesType, cmd))
	assert.NoError(t, stream.DecodeRecord(rec, &msg))
}

func TestTheWireRuleAcceptsWhatProtobufMayWrite(t *testing.T) {
	desync := func(missing []byte) []byte {
		return field(nil, 7, protowire.BytesType, append(field(nil, 1, protowire.VarintType, uint64(5)), missing...))
	}
	var msg pb.ServerMessage
	// A repeated scalar packed, or one value per field.
	packed := field(nil, 3, protowire.BytesType, []byte{0x01, 0x02, 0x03})
	unpacked := field(field(nil, 3, protowire.VarintType, uint64(1)), 3, protowire.VarintType, uint64(2))
	for name, rec := range map[string][]byte{"packed": desync(packed), "unpacked": desync(unpacked)} {
		if assert.NoError(t, stream.DecodeRecord(rec, &msg), name) {
			assert.NotEmpty(t, msg.GetDesync().GetMissing(), name)
		}
	}
	// A field this build does not know, of any wire type but a group's: a newer writer's.
	for _, unknown := range [][]byte{
		field(nil, 99, protowire.VarintType, uint64(1)),
		field(nil, 99, protowire.BytesType, []byte("later")),
		protowire.AppendFixed32(protowire.AppendTag(nil, 99, protowire.Fixed32Type), 1),
		protowire.AppendFixed64(protowire.AppendTag(nil, 99, protowire.Fixed64Type), 1),
	} {
		assert.NoError(t, stream.DecodeRecord(desync(unknown), &msg), "%x", unknown)
	}
}

func TestTheWireRuleRefusesWhatNoWriterWrites(t *testing.T) {
	var msg pb.ServerMessage
	for name, rec := range map[string][]byte{
		"a group": field(nil, 7, protowire.BytesType, protowire.AppendTag(protowire.AppendTag(nil, 99, protowire.StartGroupType), 99, protowire.EndGroupType)),
		// Packed values must be whole: a varint cut short inside the run.
		"a cut packed run": field(nil, 7, protowire.BytesType, field(nil, 3, protowire.BytesType, []byte{0x01, 0x80})),
		// A checkpoint's hash (fixed64) as a varint.
		"a fixed64 as a varint": field(nil, 4, protowire.BytesType, field(nil, 2, protowire.VarintType, uint64(7))),
	} {
		assert.ErrorIs(t, stream.DecodeRecord(rec, &msg), stream.ErrRecord, name)
	}
}
