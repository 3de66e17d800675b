package loadtest

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tickrelay/tickrelay/loadtest/fanout"
)

// childEnv makes the test binary a swarm process (TestMain).
const childEnv = "TICKRELAY_LOADTEST_TEST_CHILD"

// swarmProcs is a config whose connections run in n copies of the test binary.
func swarmProcs(t *testing.T, cfg Config, n int) Config {
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(childEnv, "1")
	cfg.Procs, cfg.ChildCommand = n, []string{exe, "-test.run=^$"}
	return cfg
}

func TestASwarmSplitOverProcessesReportsEveryConnectionAsOneProcessWould(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := swarmProcs(t, Config{Matches: 3, Players: 2, Spectators: 1, Duration: 2 * time.Second, Warmup: 200 * time.Millisecond, TickRate: 60, CommandRate: 20, Seed: 7, Predict: true}, 2)
	rep, err := Run(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Connections.Players)
	assert.Equal(t, 3, rep.Connections.Spectators)
	assert.Zero(t, rep.Dropped.Players, rep.Dropped.Reasons)
	assert.Zero(t, rep.Dropped.Spectators, rep.Dropped.Reasons)
	assert.Zero(t, rep.Desyncs)
	assert.Zero(t, rep.StateMismatches)
	assert.Positive(t, rep.Frames.Player)
	assert.Positive(t, rep.Frames.Spectator)
	assert.Positive(t, rep.Commands.Acked)
	assert.Positive(t, rep.Latency.Count, "the children's latency histograms are merged")
	assert.Positive(t, rep.Jitter.Count)
	if runtime.GOOS == "linux" {
		require.NotNil(t, rep.Arrival, "the children's arrival histograms are merged")
		assert.GreaterOrEqual(t, rep.Arrival.Count, rep.Jitter.Count*9/10, "nearly every frame timed is stamped too")
	}
	assert.NotEmpty(t, rep.Series)
	require.NotNil(t, rep.Prediction, "the bots predicted in their processes")
	assert.Positive(t, rep.Prediction.Perceived.Count, "the children's perceived histograms are merged")
	assert.Positive(t, rep.Prediction.Rollbacks, "their heads' figures came back with their stats")
	assert.Positive(t, rep.CPU.SwarmProcsSeconds, "the children's CPU is reported apart")
	assert.Equal(t, rep.CPU.ProcessSeconds, rep.CPU.RelaySeconds, "this process is the relay alone")
}

func TestTheFloorsDeliverOneFramePerConnectionPerTickFromSwarmProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := swarmProcs(t, Config{Matches: 2, Players: 2, Spectators: 1, Duration: time.Second, TickRate: 60}, 2)
	for name, run := range map[string]func(context.Context, Config) (*FloorReport, error){"websocket": Floor, "input": InputFloor, "raw write": RawFloor} {
		rep, err := run(ctx, cfg)
		require.NoError(t, err, name)
		assert.Equal(t, 6, rep.Connections, name)
		assert.Positive(t, rep.Frames, name)
		assert.Positive(t, rep.Jitter.Count, name)
		if runtime.GOOS == "linux" {
			require.NotNil(t, rep.Arrival, name)
			assert.GreaterOrEqual(t, rep.Arrival.Count, rep.Jitter.Count*9/10, "%s: nearly every frame read is stamped", name)
		}
		assert.Zero(t, rep.Dropped, name)
		assert.Positive(t, rep.CPU.SwarmProcsSeconds, name)
		if name == "input" {
			assert.Positive(t, rep.ClientMessages, "the children's readers send their input")
		} else {
			assert.Zero(t, rep.ClientMessages, name)
		}
	}
}

func TestTheRawFloorDeliversWholeFramesInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := RawFloor(ctx, Config{Matches: 2, Players: 2, Spectators: 1, Duration: time.Second, TickRate: 60})
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Connections)
	assert.Equal(t, len(fanout.Message(fanout.Frame())), rep.FrameBytes, "the WebSocket frame header and the relay's frame")
	assert.Positive(t, rep.Frames)
	assert.Zero(t, rep.Dropped)
}

func TestCPUListsCountTheirCPUs(t *testing.T) {
	for list, want := range map[string]int{"1": 1, "0-3": 4, "1,3": 2, "0-1,4": 3} {
		n, err := CPUCount(list)
		require.NoError(t, err, list)
		assert.Equal(t, want, n, list)
	}
	_, err := CPUCount("x")
	require.ErrorIs(t, err, ErrConfig)
}

func TestAChildKeepsTheParentsCommandRateNoneIncluded(t *testing.T) {
	for _, rate := range []float64{-1, 2, 0} {
		parent := Config{CommandRate: rate, Procs: 2}.withDefaults()
		child := childConfig(parent).withDefaults()
		assert.Equal(t, parent.CommandRate, child.CommandRate, "parent --command-rate %v", rate)
	}
}
