package loadtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheFloorServerDeliversOneFramePerConnectionPerTick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Floor(ctx, Config{Matches: 2, Players: 2, Spectators: 1, Duration: time.Second, TickRate: 60})
	require.NoError(t, err)
	t.Logf("%+v", rep)
	assert.Equal(t, 6, rep.Connections)
	assert.Positive(t, rep.Frames)
	assert.Positive(t, rep.Jitter.Count)
	assert.Zero(t, rep.Dropped)
	assert.Positive(t, rep.FrameBytes)
}
