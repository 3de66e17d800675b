package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemoPlaysAMatchWhosePlayersSpectatorAndReplayAgree(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := runDemo(ctx, &out, demoFlags{duration: 2 * time.Second, players: 4, seed: 3, tickRate: 120, replayDir: dir})
	t.Log(out.String())
	require.NoError(t, err)
	assert.Contains(t, out.String(), "in sync")
	assert.Contains(t, out.String(), "is identical")
	assert.Contains(t, out.String(), "verify  ok")
	assert.Contains(t, out.String(), "desyncs 0")
	files, err := filepath.Glob(filepath.Join(dir, "*.tkr"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	st, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}
