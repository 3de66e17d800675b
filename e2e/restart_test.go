package e2e_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// startRelay runs `tickrelay serve` as a real process and waits until it answers.
func startRelay(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("relay logs:\n%s", logs.String())
		}
	})
	return cmd
}

// testSecret is the token secret of the tests' relay processes: a restart keeps it, so
// the players' tokens still verify.
const testSecret = "00112233445566778899aabbccddeeff"

// relayArgs are serve's arguments for a test relay on addr recording into dir: fast
// (100 Hz) matches, the admin key "k", quiet logs, then extra.
func relayArgs(addr, dir string, extra ...string) []string {
	return append([]string{"--listen", addr, "--admin", "", "--replay-dir", dir, "--tick-rate", "100",
		"--token-secret", testSecret, "--admin-key", "k", "--log-level", "warn"}, extra...)
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	require.Eventually(t, func() bool {
		res, err := http.Get(base + "/v1/matches")
		if err != nil {
			return false
		}
		res.Body.Close()
		return true
	}, 30*time.Second, 20*time.Millisecond, "the relay did not come up")
}

func TestAMatchSurvivesARelayKilledMidMatch(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	if testing.Short() {
		t.Skip("starts real relay processes")
	}
	bin := tickrelayBin(t)
	dir := t.TempDir()
	addr := freePort(t)
	base := "http://" + addr
	args := relayArgs(addr, dir, "--idle-flush", "30")

	first := startRelay(t, bin, args...)
	waitReady(t, base)
	seed := uint64(5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: skirmish.Name, Players: 4, SeedOpt: &seed, MaxDurationSeconds: 10})
	require.NoError(t, err)
	var bots []*bot.Player
	for _, tok := range resp.PlayerTokens {
		b, err := bot.Play(ctx, resp.URL, tok, seed)
		require.NoError(t, err)
		bots = append(bots, b)
	}

	// SIGKILL the relay around tick 300, then start it again on the same directory.
	require.Eventually(t, func() bool { tick, ok := bots[0].Session().LastTick(); return ok && tick >= 300 }, 30*time.Second, time.Millisecond)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedAt, _ := bots[0].Session().LastTick()
	startRelay(t, bin, args...)

	var hashes []uint64
	var last uint64
	for i, b := range bots {
		st, err := b.Wait(ctx)
		require.NoError(t, err, "bot %d", i+1)
		assert.Equal(t, pb.End_REASON_MAX_DURATION, st.End.GetReason())
		assert.Positive(t, b.Session().Reconnects(), "bot %d reconnected", i+1)
		hashes = append(hashes, st.FinalHash)
		last = st.LastTick
	}
	for i := range hashes {
		assert.Equal(t, hashes[0], hashes[i], "bot %d ends in sync", i+1)
	}
	assert.Greater(t, last, killedAt+100, "the match went on after the restart")

	path := filepath.Join(dir, resp.MatchID+".tkr")
	rp, err := replay.LoadFile(path)
	require.NoError(t, err)
	require.NotNil(t, rp.End, "the resumed file got its end record")
	restarted := false
	for _, e := range rp.Events {
		restarted = restarted || e.GetKind() == pb.Event_KIND_RELAY_RESTARTED
	}
	assert.True(t, restarted, "the gap is recorded as an event")

	out, err := exec.Command(bin, "replay", "verify", path).CombinedOutput()
	assert.NoError(t, err, "replay verify: %s", out)
	assert.Contains(t, string(out), "ok ")

	info, err := os.Stat(path)
	require.NoError(t, err)
	t.Logf("killed at tick %d, ended at tick %d, replay %d bytes: %s", killedAt, last, info.Size(), bytes.TrimSpace(out))
}
