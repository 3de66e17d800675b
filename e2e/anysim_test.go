package e2e_test

import (
	"context"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/lockstep"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

// unknownSim is a sim name no tickrelay build knows; its clients run the hash chain.
const (
	unknownSim        = "anygame"
	unknownSimVersion = 3
)

// chainSim is what the clients of unknownSim run: the hash chain, after the same config
// hash check the registry path makes.
func chainSim(st *pb.Start) (sim.Sim, error) {
	if err := replay.CheckConfigHash(st); err != nil {
		return nil, err
	}
	return hashchain.New(replay.SimConfig(st)), nil
}

// dialChainPlayer joins with token and sends one 8-byte command on every live tick;
// newSim builds its sim (nil: the registry's).
func dialChainPlayer(ctx context.Context, t *testing.T, url, token string, newSim func(*pb.Start) (sim.Sim, error)) *client.Session {
	t.Helper()
	var payload [8]byte
	s, err := client.Dial(ctx, url, token, &client.Options{
		NewSim: newSim,
		OnTick: func(s *client.Session, f lockstep.Frame) {
			if !s.Live() {
				return
			}
			binary.LittleEndian.PutUint32(payload[:], s.Player())
			binary.LittleEndian.PutUint32(payload[4:], uint32(f.Tick))
			_, _, _ = s.Send(payload[:])
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAMatchOfASimTheRelayHasNeverHeardOfIsRelayedJudgedRecordedAndResumed(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	if testing.Short() {
		t.Skip("starts real relay processes")
	}
	bin := tickrelayBin(t)
	dir := t.TempDir()
	addr := freePort(t)
	base := "http://" + addr
	args := relayArgs(addr, dir, "--idle-flush", "30", "--checksum-every", "10")

	first := startRelay(t, bin, args...)
	waitReady(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := uint64(11)
	resp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: unknownSim, SimVersion: unknownSimVersion, Players: 3, SeedOpt: &seed, MaxDurationSeconds: 8})
	require.NoError(t, err)
	var players []*client.Session
	for _, tok := range resp.PlayerTokens {
		players = append(players, dialChainPlayer(ctx, t, resp.URL, tok, chainSim))
	}
	// A hashchain match beside it, whose clients take the sim from the registry: its
	// replay is verified with the AssemblyScript module below.
	chainResp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: hashchain.Name, Players: 2, SeedOpt: &seed, MaxDurationSeconds: 8})
	require.NoError(t, err)
	var chainPlayers []*client.Session
	for _, tok := range chainResp.PlayerTokens {
		chainPlayers = append(chainPlayers, dialChainPlayer(ctx, t, chainResp.URL, tok, nil))
	}
	spectator, err := client.Dial(ctx, resp.URL, resp.SpectatorToken, &client.Options{NewSim: chainSim})
	require.NoError(t, err)
	t.Cleanup(func() { spectator.Close() })

	require.Eventually(t, func() bool { tick, ok := players[0].LastTick(); return ok && tick >= 200 }, 30*time.Second, time.Millisecond)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedAt, _ := players[0].LastTick()
	startRelay(t, bin, args...)

	var last uint64
	for i, p := range append(players, spectator) {
		end, err := p.Wait(ctx)
		require.NoError(t, err, "client %d", i)
		assert.Equal(t, pb.End_REASON_MAX_DURATION, end.GetReason())
		assert.Equal(t, players[0].Sim().Hash(), p.Sim().Hash(), "client %d ends in sync", i)
		last, _ = p.LastTick()
	}
	assert.Greater(t, last, killedAt+100, "the match went on after the restart")
	for i, p := range chainPlayers {
		end, err := p.Wait(ctx)
		require.NoError(t, err, "hashchain player %d", i+1)
		assert.Equal(t, pb.End_REASON_MAX_DURATION, end.GetReason())
	}

	path := filepath.Join(dir, resp.MatchID+".tkr")
	rp, err := replay.LoadFile(path)
	require.NoError(t, err)
	require.NotNil(t, rp.End, "the resumed file got its end record")
	assert.Equal(t, unknownSim, rp.Start.GetSimName())
	assert.Empty(t, rp.Desyncs, "the judge found the players in agreement")
	assert.Greater(t, len(rp.Checkpoints), int(last/10)/2, "the judge recorded the agreed checkpoints")
	restarted := false
	for _, e := range rp.Events {
		restarted = restarted || e.GetKind() == pb.Event_KIND_RELAY_RESTARTED
	}
	assert.True(t, restarted, "the restart is recorded")

	t.Run("the replay verifies wherever the sim is known", func(t *testing.T) {
		require.NoError(t, sim.Provide(unknownSim, unknownSimVersion, func(cfg sim.Config) (sim.Sim, error) { return hashchain.New(cfg), nil }))
		rep, err := replay.Verify(rp, replay.VerifyOptions{})
		require.NoError(t, err)
		assert.Equal(t, len(rp.Checkpoints), rep.Checkpoints)
		assert.Equal(t, players[0].Sim().Hash(), rep.FinalHash)
	})
	chainPath := filepath.Join(filepath.Dir(path), chainResp.MatchID+".tkr")
	for _, file := range []string{simbuild.HashChainAS, simbuild.HashChainRust, simbuild.HashChainC} {
		t.Run("a hashchain match verifies with "+file, func(t *testing.T) {
			dir := simbuild.ModuleDir(t, file)
			out, stderr, code := runBin(t, bin, nil, "replay", "verify", "--sim-dir", dir, chainPath)
			require.Equal(t, 0, code, "%s%s", out, stderr)
			assert.Contains(t, stderr, "sim module: hashchain version 1 ("+file+")")
			assert.Contains(t, out, "checkpoints match")
		})
	}
	t.Run("and with every module make sims builds in one directory", func(t *testing.T) {
		dir := simbuild.ModuleDir(t, simbuild.Names...)
		out, stderr, code := runBin(t, bin, nil, "replay", "verify", "--sim-dir", dir, chainPath)
		require.Equal(t, 0, code, "%s%s", out, stderr)
		assert.Contains(t, stderr, "sim module: hashchain version 1 (hashchain-c.wasm); hashchain-as.wasm, hashchain-go.wasm, hashchain-rust.wasm claim it too and step the same")
		assert.Contains(t, out, "checkpoints match")
	})
	t.Run("and a tool without the sim says which one it needs", func(t *testing.T) {
		out, err := exec.Command(bin, "replay", "verify", path).CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		assert.Equal(t, 2, exit.ExitCode(), "%s", out)
		assert.Contains(t, string(out), unknownSim)
	})
}
