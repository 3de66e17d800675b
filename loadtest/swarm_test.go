package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" { // a swarm process of a --procs test (see swarmProcs)
		if err := ServeChild(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestASmallEmbeddedSwarmReportsFramesLatencyAndNoDesync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Matches: 2, Players: 2, Spectators: 1, Duration: 2 * time.Second, Warmup: 200 * time.Millisecond, TickRate: 60, CommandRate: 20, Seed: 7})
	require.NoError(t, err)
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log("\n" + text.String())

	assert.Equal(t, 4, rep.Connections.Players)
	assert.Equal(t, 2, rep.Connections.Spectators)
	assert.Positive(t, rep.Frames.Player)
	assert.Positive(t, rep.Frames.Spectator)
	assert.Positive(t, rep.Commands.Sent)
	assert.Zero(t, rep.Desyncs)
	assert.Zero(t, rep.StateMismatches)
	assert.Zero(t, rep.Dropped.Players, rep.Dropped.Reasons)
	assert.Zero(t, rep.Dropped.Spectators, rep.Dropped.Reasons)
	assert.Positive(t, rep.Latency.Count)
	assert.Positive(t, rep.Latency.P50)
	assert.GreaterOrEqual(t, rep.Latency.P99, rep.Latency.P50)
	assert.GreaterOrEqual(t, rep.Latency.Max, rep.Latency.P999)
	assert.Positive(t, rep.Jitter.Count)
	if runtime.GOOS == "linux" {
		require.NotNil(t, rep.Arrival, "frames stamped by the kernel")
		assert.GreaterOrEqual(t, rep.Arrival.Count, rep.Jitter.Count*9/10, "nearly every frame timed is stamped too")
	}
	assert.Positive(t, rep.CPU.ProcessSeconds)
	assert.Positive(t, rep.Relay.FramesSent)
	assert.NotEmpty(t, rep.Series)

	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	back.latency, back.jitter = rep.latency, rep.jitter
	assert.Equal(t, *rep, back)
}

// TestPredictingBotsReportWhenTheirCommandsShowAndWhatRollbacksCost: with --predict and
// --net-delay, the report gives the perceived latency (own commands in the head) beside
// the confirmed one, and the rollback figures; nobody desyncs.
func TestPredictingBotsReportWhenTheirCommandsShowAndWhatRollbacksCost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Matches: 2, Players: 3, Duration: 2 * time.Second, Warmup: 300 * time.Millisecond, TickRate: 30, CommandRate: 6, Seed: 7,
		Predict: true, NetDelay: 20 * time.Millisecond})
	require.NoError(t, err)
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log("\n" + text.String())
	require.NotNil(t, rep.Prediction)
	pr := rep.Prediction
	assert.Positive(t, pr.Perceived.Count)
	assert.Less(t, pr.Perceived.P99, rep.Latency.P50, "shown before the relay seals it (a tick and two network delays at least)")
	assert.Positive(t, pr.Rollbacks, "the other bots' commands are predicted as none")
	assert.Positive(t, pr.DepthP99)
	assert.Zero(t, rep.Desyncs)
	assert.Zero(t, rep.StateMismatches)
	assert.Contains(t, text.String(), "predicted own commands shown in the head")
	var byDepth int64
	for _, n := range pr.DepthHist {
		byDepth += n
	}
	assert.Equal(t, pr.Rollbacks, byDepth, "every rollback in the depth histogram")

}
