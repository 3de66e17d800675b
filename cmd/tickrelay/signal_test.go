//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A relay that is shutting down waits for its connections to close; a second SIGTERM
// must stop it at once, with a non-zero status saying so. A connection that never reads
// keeps the first shutdown waiting (the relay's close handshake with it gets no reply),
// so without the second signal this relay would stop cleanly, with status 0, seconds
// later.
func TestASecondSignalStopsARelayThatIsShuttingDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real relay process")
	}
	bin := buildBinary(t)
	addr := freePort(t)
	cmd := exec.Command(bin, append([]string{"serve"}, relayArgs(addr, t.TempDir(), "--shutdown-grace", "60s", "--max-connections-per-address", "1")...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("relay output:\n%s", stderr.String())
		}
	})
	waitReady(t, "http://"+addr)

	ctx := context.Background()
	silent, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/ws", nil)
	require.NoError(t, err)
	defer silent.CloseNow()
	// One connection per address: a second one is refused once the relay has counted
	// the silent one, so the shutdown below will find it.
	require.Eventually(t, func() bool {
		probe, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/ws", nil)
		if err != nil {
			return false
		}
		defer probe.CloseNow()
		for {
			if _, _, err := probe.Read(ctx); err != nil {
				return websocket.CloseStatus(err) == websocket.StatusTryAgainLater
			}
		}
	}, 10*time.Second, 20*time.Millisecond, "the relay never counted the silent connection")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		c, res, err := websocket.Dial(ctx, "ws://"+addr+"/v1/ws", nil)
		if err == nil {
			c.CloseNow()
		}
		return res != nil && res.StatusCode == 503
	}, 10*time.Second, 20*time.Millisecond, "the relay did not begin shutting down after the first signal")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))

	select {
	case err := <-exited:
		exited <- err // for the cleanup
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "the relay exited with status 0 (%v): the second signal did not force the stop", err)
		assert.NotEqual(t, 0, exit.ExitCode())
		assert.Contains(t, stderr.String(), "stopped at once by a second signal")
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not stop within 30 s of the second signal")
	}
}
