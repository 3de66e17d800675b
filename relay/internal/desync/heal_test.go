package desync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

func TestAPeersStateIsTakenInOrderWithinTheBounds(t *testing.T) {
	state := make([]byte, 2*lockstep.StateChunk+5)
	for i := range state {
		state[i] = byte(i)
	}
	chunk := func(from, to int) *pb.Evidence {
		return &pb.Evidence{State: state[from:to], StateOffset: uint32(from), StateSize: uint32(len(state))}
	}
	h := &healing{rec: &pb.Heal{Source: 2}}
	for i, c := range []*pb.Evidence{chunk(0, lockstep.StateChunk), chunk(lockstep.StateChunk, 2*lockstep.StateChunk)} {
		done, why := h.take(c)
		require.Empty(t, why, "chunk %d", i)
		assert.False(t, done)
	}
	done, why := h.take(chunk(2*lockstep.StateChunk, len(state)))
	require.Empty(t, why)
	assert.True(t, done)
	assert.Equal(t, state, h.state)

	for name, ev := range map[string]*pb.Evidence{
		"missing":         {Missing: "the sim cannot take a snapshot"},
		"out of order":    chunk(lockstep.StateChunk, 2*lockstep.StateChunk),
		"a chunk too big": {State: make([]byte, lockstep.StateChunk+1), StateSize: lockstep.StateChunk + 1},
		"too large":       {State: []byte{1}, StateSize: lockstep.MaxPeerState + 1},
		"past its size":   {State: []byte{1, 2, 3}, StateSize: 2},
		"empty":           {StateSize: 2},
	} {
		h := &healing{rec: &pb.Heal{Source: 2}}
		done, why := h.take(ev)
		assert.False(t, done, name)
		assert.NotEmpty(t, why, name)
		assert.Contains(t, why, "player 2", name)
	}
	h = &healing{rec: &pb.Heal{Source: 2}}
	_, why = h.take(&pb.Evidence{State: []byte{1}, StateSize: 4})
	require.Empty(t, why)
	_, why = h.take(&pb.Evidence{State: []byte{2}, StateOffset: 1, StateSize: 5})
	assert.NotEmpty(t, why, "a size that changed")
}

// FuzzPeerState feeds any chunks: the state never grows past its size or the bound, and is
// whole exactly when it reached its size.
func FuzzPeerState(f *testing.F) {
	a, _ := proto.Marshal(&pb.Evidence{State: []byte{1, 2}, StateSize: 3})
	b, _ := proto.Marshal(&pb.Evidence{State: []byte{3}, StateOffset: 2, StateSize: 3})
	f.Add(a, b, []byte{})
	f.Fuzz(func(t *testing.T, x, y, z []byte) {
		h := &healing{rec: &pb.Heal{Source: 1}}
		for _, raw := range [][]byte{x, y, z} {
			ev := &pb.Evidence{}
			if proto.Unmarshal(raw, ev) != nil {
				continue
			}
			done, why := h.take(ev)
			require.LessOrEqual(t, len(h.state), lockstep.MaxPeerState)
			if h.size != 0 {
				require.LessOrEqual(t, uint32(len(h.state)), h.size)
			}
			require.Equal(t, done, why == "" && h.size != 0 && uint32(len(h.state)) == h.size)
			if why != "" || done {
				return
			}
		}
	})
}
