package loadtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheFloorServerFeedsEveryConnectionOfTheSwarmShape(t *testing.T) {
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

func TestTheInputFloorReadsWhatItsPlayersAndSpectatorsSend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Matches: 2, Players: 2, Spectators: 1, Duration: 2 * time.Second, TickRate: 60, CommandRate: 6}
	rep, err := InputFloor(ctx, cfg)
	require.NoError(t, err)
	t.Logf("%+v", rep)
	// 6 commands, 2 checksums (every 30 ticks at 60 Hz) and a ping a second.
	require.InDelta(t, 9.0, rep.InputRate, 1e-9)
	assert.Zero(t, rep.Dropped)
	// 4 players × 9/s and 2 spectators × 1 ping/s, for 2 s: 76 (spectators sending what
	// players send would make it 108, spectators sending nothing 72).
	want := (float64(cfg.Matches*cfg.Players)*rep.InputRate + float64(cfg.Matches*cfg.Spectators)*pingRate()) * rep.Seconds
	assert.InDelta(t, want, float64(rep.ClientMessages), want/4)

	plain, err := Floor(ctx, cfg)
	require.NoError(t, err)
	assert.Zero(t, plain.ClientMessages, "the plain floor's readers send nothing")
}
