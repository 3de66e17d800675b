package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/loadtest"
)

func TestLoadtestWritesATextReportJSONAndAPlotAndComparesWithTheFloor(t *testing.T) {
	dir := t.TempDir()
	f := loadtestFlags{
		cfg: loadtest.Config{
			Matches: 2, Players: 2, Spectators: 1, Duration: time.Second, Warmup: 100 * time.Millisecond,
			TickRate: 60, CommandRate: 10, Seed: 1,
			JitterThreshold: time.Hour, // correctness, not the speed of a shared machine
		},
		reportPath: filepath.Join(dir, "out", "report.json"),
		pngPath:    filepath.Join(dir, "out", "latency.png"),
		floor:      true,
	}
	text, res := runForReport(t, f)
	assert.Contains(t, text, "desyncs   0")
	assert.Contains(t, text, "efficiency")
	require.NotNil(t, res.Run)
	require.NotNil(t, res.Floor)
	require.NotNil(t, res.Efficiency)
	assert.Positive(t, res.Run.Frames.Player)
	assert.Positive(t, res.Floor.Frames)

	png, err := os.ReadFile(f.pngPath)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG file")
}

func TestLoadtestRampStopsAtTheFirstFailingLevel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	// A threshold no real run meets: the first level fails and the capacity is 0.
	err := runLoadtest(ctx, &out, loadtestFlags{
		cfg:  loadtest.Config{Players: 2, Spectators: 0, Warmup: -1, TickRate: 60, JitterThreshold: time.Nanosecond},
		ramp: true, levels: []int{1, 2}, stepDuration: time.Second,
	})
	t.Log("\n" + out.String())
	require.NoError(t, err)
	assert.Contains(t, out.String(), "capacity  0 matches")
	assert.NotContains(t, out.String(), "    2 matches")
}

func TestLoadtestRefusesRampWithFloor(t *testing.T) {
	err := runLoadtest(context.Background(), &bytes.Buffer{}, loadtestFlags{ramp: true, floor: true})
	assert.Error(t, err)
	err = runLoadtest(context.Background(), &bytes.Buffer{}, loadtestFlags{soak: time.Second, floor: true})
	assert.Error(t, err)
}

func TestLoadtestSoakReportsSlopesInTextAndJSON(t *testing.T) {
	dir := t.TempDir()
	f := loadtestFlags{
		cfg: loadtest.Config{Matches: 2, Players: 2, Spectators: 1, Warmup: -1, TickRate: 60, CommandRate: 10, Seed: 1,
			JitterThreshold: time.Hour},
		soak: 3 * time.Second, soakSample: time.Second, reportPath: filepath.Join(dir, "soak.json"),
	}
	text, res := runForReport(t, f)
	assert.Contains(t, text, "process goroutines")
	assert.Contains(t, text, "slope")
	require.NotNil(t, res.Run)
	require.NotNil(t, res.Run.Soak)
	assert.GreaterOrEqual(t, len(res.Run.Soak.Samples), 4)
	assert.Len(t, res.Run.Soak.Series, 3)
	assert.InDelta(t, 3, res.Run.Seconds, 1)
}

func TestLoadtestExitStatusFollowsTheOneRule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	// A threshold no real run meets: the run fails the rule, the command exits 1.
	err := runLoadtest(ctx, &out, loadtestFlags{
		cfg: loadtest.Config{Matches: 1, Players: 2, Spectators: 0, Duration: time.Second, Warmup: -1, TickRate: 60,
			JitterThreshold: time.Nanosecond},
	})
	t.Log("\n" + out.String())
	var exit exitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.code)
	assert.Contains(t, err.Error(), "p99 frame jitter")
	assert.Contains(t, out.String(), "verdict   FAIL: p99 frame jitter")
}

// runForReport runs the load test of f (a minute at most), which must pass, and returns
// its text and the JSON report it wrote to f.reportPath.
func runForReport(t *testing.T, f loadtestFlags) (string, loadtest.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := runLoadtest(ctx, &out, f)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	b, err := os.ReadFile(f.reportPath)
	require.NoError(t, err)
	var res loadtest.Result
	require.NoError(t, json.Unmarshal(b, &res))
	return out.String(), res
}
