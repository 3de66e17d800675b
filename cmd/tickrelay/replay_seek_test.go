package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/replay"
)

func TestReplaySeekPrintsTheHashTheCheckpointsHold(t *testing.T) {
	path := recordFile(t, "2000")
	rp, err := replay.LoadFile(path)
	require.NoError(t, err)
	require.NotEmpty(t, rp.Checkpoints)
	// Forward, then back past a snapshot: the seeker's rewinding gives the same hashes.
	for _, i := range []int{len(rp.Checkpoints) - 1, 0, len(rp.Checkpoints) / 2} {
		cp := rp.Checkpoints[i]
		out, code := run(t, "replay", "seek", path, "--tick", fmt.Sprint(cp.GetTick()))
		require.Equal(t, 0, code)
		assert.Equal(t, fmt.Sprintf("tick %d hash %016x\n", cp.GetTick(), cp.GetHash()), out)
	}
}

func TestReplaySeekPastTheLastTickIsUnusable(t *testing.T) {
	path := recordFile(t, "300")
	_, code := run(t, "replay", "seek", path, "--tick", "300")
	assert.Equal(t, exitUnusable, code)
}
