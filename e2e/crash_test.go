package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// A relay killed mid-match (kill -9), on real processes (the helpers are restart_test.go's). Matches
// are short and fast (100 Hz) so that the whole file stays well under a minute.

// crashRelay is a relay process on one address and replay directory, killed and
// started again at will.
type crashRelay struct {
	t         *testing.T
	bin, addr string
	args      []string
	proc      *exec.Cmd
}

// newCrashRelay starts a relay on dir; ctx bounds the test's waits.
func newCrashRelay(t *testing.T, dir string, extra ...string) (r *crashRelay, ctx context.Context) {
	if testing.Short() {
		t.Skip("starts real relay processes")
	}
	addr := freePort(t)
	args := relayArgs(addr, dir, append([]string{"--rejoin-grace", "20s"}, extra...)...)
	r = &crashRelay{t: t, bin: tickrelayBin(t), addr: addr, args: args}
	r.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return r, ctx
}

func (r *crashRelay) base() string { return "http://" + r.addr }

func (r *crashRelay) start() {
	r.proc = startRelay(r.t, r.bin, r.args...)
	waitReady(r.t, r.base())
}

func (r *crashRelay) kill() {
	require.NoError(r.t, r.proc.Process.Signal(syscall.SIGKILL))
	_ = r.proc.Wait()
}

// play creates a match and starts a bot for each of the first `join` slots.
func (r *crashRelay) play(ctx context.Context, req relay.CreateRequest, join int) (*relay.CreateResponse, []*bot.Player) {
	resp, err := relay.PostMatch(ctx, nil, r.base(), "k", req)
	require.NoError(r.t, err)
	var bots []*bot.Player
	for _, tok := range resp.PlayerTokens[:join] {
		b, err := bot.Play(ctx, resp.URL, tok, req.Seed)
		require.NoError(r.t, err)
		bots = append(bots, b)
	}
	return resp, bots
}

// endInSync waits for every bot's End and checks they all end with reason at the same
// last tick and state; it returns the last tick.
func endInSync(t *testing.T, ctx context.Context, bots []*bot.Player, reason pb.End_Reason) uint64 {
	t.Helper()
	var hash, last uint64
	for i, b := range bots {
		st, err := b.Wait(ctx)
		require.NoError(t, err, "bot %d", i+1)
		assert.Equal(t, reason, st.End.GetReason(), "bot %d gets the End", i+1)
		if i == 0 {
			hash, last = st.FinalHash, st.LastTick
		}
		assert.Equal(t, hash, st.FinalHash, "bot %d ends in sync", i+1)
		assert.Equal(t, last, st.LastTick, "bot %d ends at the same tick", i+1)
	}
	return last
}

// verifyFile checks the match's file: finished, re-simulates, and returns it.
func verifyFile(t *testing.T, bin, path string) *replay.Replay {
	t.Helper()
	rp, err := replay.LoadFile(path)
	require.NoError(t, err)
	require.NotNil(t, rp.End, "the file got its end record")
	out, err := exec.Command(bin, "replay", "verify", path).CombinedOutput()
	assert.NoError(t, err, "replay verify: %s", out)
	return rp
}

func waitTick(t *testing.T, b *bot.Player, tick uint64) {
	t.Helper()
	require.Eventually(t, func() bool { got, ok := b.Session().LastTick(); return ok && got >= tick }, 30*time.Second, time.Millisecond)
}

// seen is the last tick any bot applied: with the relay dead, what they saw.
func seen(bots []*bot.Player) uint64 {
	var last uint64
	for _, b := range bots {
		if t, ok := b.Session().LastTick(); ok {
			last = max(last, t)
		}
	}
	return last
}

// wentOnAt returns, for each relay restart in the file, the tick the match went on at:
// the first tick its next frame or idle record covers.
func wentOnAt(t *testing.T, path string) []uint64 {
	t.Helper()
	r, err := replay.Open(path)
	require.NoError(t, err)
	defer r.Close()
	var out []uint64
	waiting := false
	for {
		msg, err := r.Next()
		if err != nil {
			return out
		}
		switch {
		case msg.GetEvent().GetKind() == pb.Event_KIND_RELAY_RESTARTED:
			waiting = true
		case msg.GetFrame() != nil && waiting:
			out, waiting = append(out, msg.GetFrame().GetTick()), false
		case msg.GetIdle() != nil && waiting:
			// The idle record a restart writes covers the ticks it skips.
			out, waiting = append(out, msg.GetIdle().GetThroughTick()+1), false
		}
	}
}

// With the default idle flush (1024 ticks), a relay killed in the last second of a match
// used to resume past the match's end and end it at once, its players never getting the
// End. Now the match waits for its players and goes on right after what they saw.
func TestARelayKilledInTheLastSecondOfAMatchStillEndsEveryGame(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	dir := t.TempDir()
	r, ctx := newCrashRelay(t, dir)
	seed := uint64(9)
	resp, bots := r.play(ctx, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Seed: seed, MaxDurationSeconds: 3}, 2)

	waitTick(t, bots[0], 230) // 300 ticks in all: under 0.7 s left
	r.kill()
	killedAt := seen(bots)
	restarted := time.Now()
	r.start()
	ready := time.Since(restarted)
	waitTick(t, bots[0], killedAt+1)
	goesOn := time.Since(restarted)

	last := endInSync(t, ctx, bots, pb.End_REASON_MAX_DURATION)
	assert.Equal(t, uint64(299), last, "the match plays to its maximum duration")
	rp := verifyFile(t, r.bin, filepath.Join(dir, resp.MatchID+".tkr"))
	require.Len(t, rp.EventsOf(pb.Event_KIND_RELAY_RESTARTED), 1)
	went := wentOnAt(t, filepath.Join(dir, resp.MatchID+".tkr"))
	require.Len(t, went, 1)
	assert.Greater(t, went[0], killedAt, "the match goes on after what its players saw")
	assert.Less(t, went[0], killedAt+30, "…right after it, not idle_flush ticks later")
	assert.Len(t, rp.EventsOf(pb.Event_KIND_RECONNECTED), 2)
	t.Logf("killed when the players had seen tick %d, went on at tick %d, ended at tick %d; relay answering %v and match going on %v after the restart",
		killedAt, went[0], last, ready.Round(time.Millisecond), goesOn.Round(time.Millisecond))
}

// A match waiting in its lobby survives a kill: the player who had joined is taken back,
// and the match starts when the other joins.
func TestAMatchKilledInItsLobbyStartsWhenItsPlayersAreBack(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	dir := t.TempDir()
	r, ctx := newCrashRelay(t, dir, "--idle-flush", "30")
	seed := uint64(4)
	req := relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Seed: seed, MaxDurationSeconds: 2}
	resp, bots := r.play(ctx, req, 1)
	path := filepath.Join(dir, resp.MatchID+".tkr")
	require.Eventually(t, func() bool {
		rp, err := replay.LoadFile(path)
		return err == nil && len(rp.EventsOf(pb.Event_KIND_JOINED)) == 1
	}, 10*time.Second, 5*time.Millisecond, "the lobby and its join are on disk")
	r.kill()
	out, err := exec.Command(r.bin, "replay", "info", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "the match never started")

	r.start()
	second, err := bot.Play(ctx, resp.URL, resp.PlayerTokens[1], seed)
	require.NoError(t, err)
	bots = append(bots, second)
	endInSync(t, ctx, bots, pb.End_REASON_MAX_DURATION)
	assert.Positive(t, bots[0].Session().Reconnects(), "the first player was taken back")

	rp := verifyFile(t, r.bin, path)
	assert.Len(t, rp.EventsOf(pb.Event_KIND_RELAY_RESTARTED), 1)
	assert.Len(t, rp.EventsOf(pb.Event_KIND_STARTED), 1)
	assert.Len(t, rp.EventsOf(pb.Event_KIND_RECONNECTED), 1)
	assert.Len(t, rp.EventsOf(pb.Event_KIND_JOINED), 2)
}

func TestAMatchSurvivesTwoKills(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	dir := t.TempDir()
	r, ctx := newCrashRelay(t, dir, "--idle-flush", "30")
	seed := uint64(6)
	resp, bots := r.play(ctx, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Seed: seed, MaxDurationSeconds: 5}, 2)

	waitTick(t, bots[0], 120)
	r.kill()
	first := seen(bots)
	r.start()
	waitTick(t, bots[0], first+150)
	r.kill()
	second := seen(bots)
	r.start()

	last := endInSync(t, ctx, bots, pb.End_REASON_MAX_DURATION)
	assert.Equal(t, uint64(499), last)
	rp := verifyFile(t, r.bin, filepath.Join(dir, resp.MatchID+".tkr"))
	assert.Len(t, rp.EventsOf(pb.Event_KIND_RELAY_RESTARTED), 2)
	went := wentOnAt(t, filepath.Join(dir, resp.MatchID+".tkr"))
	require.Len(t, went, 2)
	assert.Greater(t, went[0], first)
	assert.Greater(t, went[1], second, "the second restart waits for the players the first one took back")
	out, err := exec.Command(r.bin, "replay", "info", filepath.Join(dir, resp.MatchID+".tkr")).CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(out), "2 relay restarts")
	t.Logf("killed after ticks %d and %d, went on at %v: %s", first, second, went, grepLine(string(out), "events"))
}

func grepLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// A restart with another token secret would leave every unfinished match unjoinable: the
// relay refuses to start, and says what to do.
func TestARestartWithAnotherTokenSecretIsRefused(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	dir := t.TempDir()
	r, ctx := newCrashRelay(t, dir)
	_, err := relay.PostMatch(ctx, nil, r.base(), "k", relay.CreateRequest{Sim: skirmish.Name, Players: 2})
	require.NoError(t, err)
	r.kill()

	fp, err := os.ReadFile(filepath.Join(dir, "token-secret.fingerprint"))
	require.NoError(t, err)
	assert.NotContains(t, string(fp), testSecret, "the fingerprint is not the secret")

	args := append([]string(nil), r.args...)
	for i := range args {
		if args[i] == testSecret {
			args[i] = "ffeeddccbbaa99887766554433221100"
		}
	}
	cmd := exec.CommandContext(ctx, r.bin, append([]string{"serve"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the relay refuses to start: %s", out)
	assert.Contains(t, string(out), "another --token-secret")
	assert.Contains(t, string(out), "token-secret.fingerprint")
	assert.Contains(t, string(out), "move the .tkr files")

	r.start() // the right secret resumes the match
}

// A damaged file in the replay directory keeps the relay from starting, named once with
// the byte where its damaged block starts; replay verify says the same (exit 2).
func TestARelayRefusesADamagedReplayNamingTheByte(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	if testing.Short() {
		t.Skip("starts real relay processes")
	}
	bin := tickrelayBin(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.tkr")
	out, err := exec.Command(bin, "replay", "record", "--seed", "1", "--ticks", "6000", "--stop-at-end=false", "--out", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[2000] ^= 0x10 // in the first 4096-byte block after the start record
	require.NoError(t, os.WriteFile(path, b, 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err = exec.CommandContext(ctx, bin, "serve", "--listen", freePort(t), "--admin", "", "--replay-dir", dir,
		"--token-secret", testSecret, "--admin-key", "k").CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Equal(t, 1, strings.Count(string(out), path), "the file is named once: %s", out)
	assert.Contains(t, string(out), "corrupt record at byte ")
	assert.Contains(t, string(out), "fails its crc record")

	out, err = exec.Command(bin, "replay", "verify", path).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "fails its crc record")
}
