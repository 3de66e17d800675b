package abi_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

func TestCommandsRoundTripInTheDocumentedLayout(t *testing.T) {
	cmds := []sim.Command{{Player: 1, Seq: 7, Payload: []byte("ab")}, {Player: 2, Seq: 1}, {Player: 0x01020304, Seq: 9, Payload: []byte{0xff}}}
	b := make([]byte, abi.CommandsSize(cmds))
	abi.PutCommands(b, cmds)
	assert.Equal(t, []byte{
		1, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 'a', 'b',
		2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		4, 3, 2, 1, 9, 0, 0, 0, 1, 0, 0, 0, 0xff,
	}, b, "little-endian player, seq, length, payload; no padding")
	got, err := abi.AppendCommands(nil, b, uint32(len(cmds)))
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i := range cmds {
		assert.Equal(t, cmds[i].Player, got[i].Player)
		assert.Equal(t, cmds[i].Seq, got[i].Seq)
		assert.True(t, bytes.Equal(cmds[i].Payload, got[i].Payload))
	}
	_, err = abi.AppendCommands(nil, b, 4)
	assert.ErrorIs(t, err, abi.ErrMalformed, "one command too many")
	_, err = abi.AppendCommands(nil, b, 2)
	assert.ErrorIs(t, err, abi.ErrMalformed, "bytes left over")
}

func TestSubHashesRoundTripAndBadOnesAreRefused(t *testing.T) {
	hs := []sim.NamedHash{{Name: "units", Hash: 1}, {Name: "", Hash: 2}, {Name: "rng", Hash: ^uint64(0)}}
	got, err := abi.ParseSubHashes(abi.AppendSubHashes(nil, hs))
	require.NoError(t, err)
	assert.Equal(t, hs, got)
	for name, b := range map[string][]byte{
		"empty":             nil,
		"a huge count":      {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"a name past input": append(abi.AppendSubHashes(nil, nil)[:0], 1, 0, 0, 0, 200, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8),
		"trailing bytes":    append(abi.AppendSubHashes(nil, hs), 0),
	} {
		_, err := abi.ParseSubHashes(b)
		assert.ErrorIs(t, err, abi.ErrMalformed, name)
	}
}

func TestASpanOutsideMemoryIsRefused(t *testing.T) {
	ptr, n, err := abi.CheckSpan(abi.Span(10, 6), 16)
	require.NoError(t, err)
	assert.Equal(t, [2]uint32{10, 6}, [2]uint32{ptr, n})
	_, _, err = abi.CheckSpan(abi.Span(10, 7), 16)
	assert.ErrorIs(t, err, abi.ErrMalformed)
	_, _, err = abi.CheckSpan(abi.Failed, 1<<31)
	assert.ErrorIs(t, err, abi.ErrMalformed, "the failure span never reads as bytes")
}

func FuzzCommands(f *testing.F) {
	cmds := []sim.Command{{Player: 1, Seq: 1, Payload: []byte("x")}, {Player: 2, Seq: 3}}
	b := make([]byte, abi.CommandsSize(cmds))
	abi.PutCommands(b, cmds)
	f.Add(b, uint32(2))
	f.Add([]byte{}, uint32(0))
	f.Add([]byte{1, 2, 3}, uint32(1))
	f.Fuzz(func(t *testing.T, b []byte, count uint32) {
		got, err := abi.AppendCommands(nil, b, count%1024)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		again := make([]byte, abi.CommandsSize(got))
		abi.PutCommands(again, got)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %d commands gave %x, want %x", len(got), again, b)
		}
	})
}

func FuzzSubHashes(f *testing.F) {
	f.Add(abi.AppendSubHashes(nil, []sim.NamedHash{{Name: "a", Hash: 1}}))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := abi.ParseSubHashes(b)
		if err != nil {
			return
		}
		if again := abi.AppendSubHashes(nil, hs); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding gave %x, want %x", again, b)
		}
	})
}
