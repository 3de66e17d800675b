//go:build unix

package e2e_test

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
	"google.golang.org/protobuf/proto"

	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/stream"
)

// A relay that is shutting down waits for its connections to close; a second SIGTERM
// must stop it at once, with a non-zero status saying so. A player that stops reading
// after its Welcome keeps the first shutdown waiting (the relay's close handshake with it
// gets no reply, for the library's 5 s), so without the second signal this relay would
// stop cleanly, with status 0, seconds later.
func TestASecondSignalStopsARelayThatIsShuttingDown(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	if testing.Short() {
		t.Skip("starts a real relay process")
	}
	bin := tickrelayBin(t)
	addr := freePort(t)
	cmd := exec.Command(bin, append([]string{"serve"}, relayArgs(addr, t.TempDir(), "--shutdown-grace", "60s")...)...)
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
	base := "http://" + addr
	waitReady(t, base)

	// A player joins a match (its Welcome proves the relay holds the connection), then
	// never reads again.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: "anygame", SimVersion: 1, Players: 2})
	require.NoError(t, err)
	silent, _, err := websocket.Dial(ctx, m.URL, nil)
	require.NoError(t, err)
	defer silent.CloseNow()
	join, err := proto.Marshal(&pb.ClientMessage{Msg: &pb.ClientMessage_Join{Join: &pb.Join{Token: m.PlayerTokens[0], StreamVersion: stream.Version}}})
	require.NoError(t, err)
	require.NoError(t, silent.Write(ctx, websocket.MessageBinary, join))
	_, welcome, err := silent.Read(ctx)
	require.NoError(t, err)
	var msg pb.ServerMessage
	require.NoError(t, stream.DecodeRecord(welcome[:mustSplit(t, welcome)], &msg))
	require.NotNil(t, msg.GetWelcome(), "the relay's first record to a joining player")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		c, res, err := websocket.Dial(ctx, m.URL, nil)
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

// mustSplit is the length of the first record of b.
func mustSplit(t *testing.T, b []byte) int {
	t.Helper()
	n, err := stream.SplitRecord(b)
	require.NoError(t, err)
	return n
}
