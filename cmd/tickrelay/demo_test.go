package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/web"
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
	if web.Built() {
		// The link dies with the demo's relay: the demo says so, twice.
		assert.Regexp(t, `watch   http://\S+/watch#token=\S+  \(while the demo runs; --web keeps the relay up after it\)`, out.String())
		assert.Contains(t, out.String(), "the relay has stopped, and the watch link with it")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tkr"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	st, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}

// lockedBuffer is a bytes.Buffer safe to write from one goroutine and read from another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestDemoWebPrintsTheWatchLinkAndKeepsTheRelayUpAfterTheMatchUntilStopped(t *testing.T) {
	if !web.Built() {
		t.Skip("the web app is not built into this test binary (make web)")
	}
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, &out, demoFlags{duration: 2 * time.Second, players: 2, seed: 3, tickRate: 60, replayDir: t.TempDir(), web: true})
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "web     the relay stays up") }, time.Minute, 20*time.Millisecond)
	watch := regexp.MustCompile(`watch   (http://\S+/watch)#token=\S+`).FindStringSubmatch(out.String())
	require.NotNil(t, watch, out.String())
	for _, page := range []string{watch[1], strings.TrimSuffix(watch[1], "/watch") + "/replay"} {
		res, err := http.Get(page)
		require.NoError(t, err, "the relay still serves its pages after the match")
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, string(body), "build/app.js")
	}
	assert.Contains(t, out.String(), "verify  ok")
	cancel()
	require.NoError(t, <-done)
}
