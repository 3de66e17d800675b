package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/tools/scripted"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
)

// run executes tickrelay with args and returns stdout and the exit code main would use.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, code, _ := runErr(t, args...)
	return out, code
}

// runErr is run that also returns the error main would print.
func runErr(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.Execute()
	code := 0
	var ex exitError
	switch {
	case errors.As(err, &ex):
		code = ex.code
	case err != nil:
		code = 2
	}
	if err != nil {
		t.Logf("tickrelay %s: %v (stderr: %s)", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), code, err
}

func recordFile(t *testing.T, ticks string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "match.tkr")
	out, code := run(t, "replay", "record", "--seed", "3", "--players", "4", "--ticks", ticks, "--out", path)
	require.Equal(t, 0, code)
	require.Contains(t, out, "recorded match")
	return path
}

func TestReplayVerifyExitCodes(t *testing.T) {
	good := recordFile(t, "900")

	t.Run("a faithful replay exits 0", func(t *testing.T) {
		out, code := run(t, "replay", "verify", good)
		assert.Equal(t, exitOK, code)
		assert.Contains(t, out, "ok ")
		assert.Contains(t, out, "30 checkpoints match")
	})
	t.Run("a corrupted checkpoint exits 1 naming the tick", func(t *testing.T) {
		rp, err := replay.LoadFile(good)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "bad.tkr")
		f, err := os.Create(path)
		require.NoError(t, err)
		w, err := replay.NewWriter(f, rp.Start, nil)
		require.NoError(t, err)
		for tick := uint64(0); tick < rp.Ticks; tick++ {
			require.NoError(t, w.Frame(rp.FrameAt(tick)))
		}
		for _, c := range rp.Checkpoints {
			h := c.GetHash()
			if c.GetTick() == 449 {
				h++
			}
			require.NoError(t, w.Checkpoint(c.GetTick(), h))
		}
		require.NoError(t, w.Close(nil))

		out, code := run(t, "replay", "verify", path)
		assert.Equal(t, exitDiverged, code)
		assert.Contains(t, out, "DIVERGED")
		assert.Contains(t, out, "at tick 449")
	})
	t.Run("a sim version this build does not have exits 2", func(t *testing.T) {
		start := scripted.RecordOptions{Options: scripted.Options{Seed: 1, Players: 2}}.Start()
		start.SimVersion = 99
		start.ConfigHash = replay.ConfigHash(start)
		path := filepath.Join(t.TempDir(), "v99.tkr")
		w, err := replay.Create(path, start, nil)
		require.NoError(t, err)
		require.NoError(t, w.Close(nil))
		_, code := run(t, "replay", "verify", path)
		assert.Equal(t, exitUnusable, code)
	})
	t.Run("a missing file exits 2", func(t *testing.T) {
		_, code := run(t, "replay", "verify", filepath.Join(t.TempDir(), "nope.tkr"))
		assert.Equal(t, exitUnusable, code)
	})
	t.Run("--expect compares a baseline hash stream", func(t *testing.T) {
		hashes := filepath.Join(t.TempDir(), "hashes.txt")
		out, code := run(t, "sim", "run", "--seed", "3", "--players", "4", "--ticks", "900", "--every", "100")
		require.Equal(t, 0, code)
		require.NoError(t, os.WriteFile(hashes, []byte(out), 0o644))
		out, code = run(t, "replay", "verify", good, "--expect", hashes)
		assert.Equal(t, exitOK, code)
		assert.Contains(t, out, "10 expected hashes")
	})
}

func TestReplayInfoDumpAndDiff(t *testing.T) {
	a := recordFile(t, "600")
	out, code := run(t, "replay", "info", a)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "skirmish version 1, seed 3")
	assert.Contains(t, out, "600 ticks (20.0 s)")

	out, code = run(t, "replay", "dump", a, "--from", "100", "--to", "200")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "checkpoint tick=149")
	assert.NotContains(t, out, "checkpoint tick=29 ")
	assert.Regexp(t, `(?m)^ +\d+ packed frame tick=1\d\d commands=`, out, "a packed frame is shown as the frame it codes")

	out, code = run(t, "replay", "dump", a, "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"checkpoint":{"tick":"29"`)
	assert.Contains(t, out, `,"packed":true,"record":{"frame":{"tick":`)

	out, code = run(t, "replay", "diff", a, a)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "same: 600 ticks")
}

func TestReplayPlaySpeedNeverChangesTheOutcome(t *testing.T) {
	rp, err := replay.LoadFile(recordFile(t, "300"))
	require.NoError(t, err)
	play := func(speed float64) (uint64, time.Duration) {
		var slept time.Duration
		var out bytes.Buffer
		hash, err := playReplay(&out, rp, playOptions{speed: speed, renderEvery: 100, cols: 32, rows: 12}, func(d time.Duration) { slept += d })
		require.NoError(t, err)
		require.Contains(t, out.String(), "tick 299/299")
		return hash, slept
	}
	h1, slept1 := play(1)
	h16, slept16 := play(16)
	h0, slept0 := play(0)
	assert.Equal(t, h1, h16)
	assert.Equal(t, h1, h0)
	assert.InDelta(t, float64(10*time.Second), float64(slept1), float64(time.Millisecond), "300 ticks at 30 Hz take 10 s at 1x")
	assert.InDelta(t, float64(slept1)/16, float64(slept16), float64(time.Millisecond))
	assert.Zero(t, slept0)

	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, rep.FinalHash, h1, "playback ends where verification does")
}

func TestReplayPlayFromATick(t *testing.T) {
	path := recordFile(t, "300")
	out, code := run(t, "replay", "play", path, "--speed", "0", "--from", "200", "--render-every", "50")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "tick 149/")
	assert.Contains(t, out, "tick 249/")
	assert.Contains(t, out, "final 299 ")
	_ = pb.End_REASON_SHUTDOWN
}
