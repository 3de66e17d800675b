package e2e_test

import (
	"context"
	"net/http"
	"path/filepath"
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
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// steppedTwice is a skirmish that steps tick `at` twice: a peer whose sim went wrong once.
type steppedTwice struct {
	*skirmish.Game
	at uint64
}

func (s steppedTwice) Step(tick uint64, cmds []sim.Command) {
	s.Game.Step(tick, cmds)
	if tick == s.at {
		s.Game.Step(tick, nil)
	}
}

// TestTheRelayJudgesAOneVersusOneWithItsModuleAndHealsTheWrongPlayer is the healing proof
// (docs/forensics.md): a relay process with skirmish as a WebAssembly module (--sim-dir)
// and two Go players, player 2's sim going wrong once at tick 50. No majority can judge one
// against one: the relay's module names player 1 right, sends player 2 the state, player
// 2 restores it and the match plays on in one game — both end on one hash, the replay
// verifies, and the watch page (headless Chromium) shows the verdict and the heal.
func TestTheRelayJudgesAOneVersusOneWithItsModuleAndHealsTheWrongPlayer(t *testing.T) {
	t.Parallel() // waits on a relay's clock, a browser and another process more than it computes
	if testing.Short() {
		t.Skip("starts a relay process with a WebAssembly module, and a browser")
	}
	const wrongAt = 50
	bin := tickrelayBin(t)
	dir, addr := t.TempDir(), freePort(t)
	startRelay(t, bin, relayArgs(addr, dir, "--sim-dir", simbuild.ModuleDir(t, simbuild.Skirmish))...)
	base := "http://" + addr
	waitReady(t, base)
	resp, err := relay.PostMatch(context.Background(), http.DefaultClient, base, "k", relay.CreateRequest{Sim: "skirmish", SimVersion: 1, Players: 2, MaxDurationSeconds: 5})
	require.NoError(t, err)
	b := newBrowser(t)
	b.open(t, resp.WatchURL)

	players := playWithOneWrong(t, resp, 2, wrongAt)
	assert.Empty(t, players[0].healed, "player 1 was right")
	require.Equal(t, []error{nil}, players[1].healed, "player 2 was healed, once")
	t.Logf("player 2: its first desync verdict to healed in %v", players[1].took)
	assert.Equal(t, players[0].s.Sim().Hash(), players[1].s.Sim().Hash(), "one game at the end")

	b.waitFor(t, `window.tickrelay.banners.some((s) => s.startsWith("HEAL for tick"))`, browserTimeout)
	b.screenshot(t, "watch-heal")
	text := banners(t, b)
	assert.Regexp(t, `ARBITER for tick \d+: the relay's own re-simulation agrees with player 1`, text)
	assert.Regexp(t, `HEAL for tick \d+: player 2 restored the right state after tick \d+ \(from the relay's re-simulation\) and plays on in sync`, text)

	rp, err := replay.LoadFile(filepath.Join(dir, resp.MatchID+".tkr"))
	require.NoError(t, err)
	require.NotEmpty(t, rp.Arbitrations)
	assert.Equal(t, []uint32{1}, rp.Arbitrations[0].GetPlayers())
	require.Len(t, rp.Heals, 1)
	assert.Equal(t, []uint32{2}, rp.Heals[0].GetHealed())
	rep, err := replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, players[0].s.Sim().Hash(), rep.FinalHash, "the replay re-simulates to the players' state")
}

// healPlayer is a Go player of playWithOneWrong's match, and what it heard of heals.
type healPlayer struct {
	s      *client.Session
	healed []error
	heard  time.Time // of the first desync
	took   time.Duration
}

// playWithOneWrong plays resp's skirmish match with a Go player in every slot, player
// wrong's sim stepping tick wrongAt twice, and returns the players when all have ended.
func playWithOneWrong(t *testing.T, resp *relay.CreateResponse, wrong uint32, wrongAt uint64) []*healPlayer {
	t.Helper()
	players := make([]*healPlayer, len(resp.PlayerTokens))
	for i, tok := range resp.PlayerTokens {
		p, id := &healPlayer{}, uint32(i+1)
		players[i] = p
		bot := skirmish.NewBot(id, resp.Seed)
		var game *skirmish.Game
		var err error
		p.s, err = client.Dial(context.Background(), resp.URL, tok, &client.Options{
			NewSim: func(st *pb.Start) (sim.Sim, error) {
				g, err := skirmish.New(replay.SimConfig(st))
				game = g
				if err != nil || id != wrong {
					return g, err
				}
				return steppedTwice{g, wrongAt}, nil
			},
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if !s.Live() {
					return
				}
				for _, payload := range bot.Act(f.Tick, game, nil) {
					_, _, _ = s.Send(payload)
				}
			},
			OnDesync: func(*client.Session, *pb.Desync) {
				if p.heard.IsZero() {
					p.heard = time.Now()
				}
			},
			OnHealed: func(_ *client.Session, _ uint64, err error) {
				if len(p.healed) == 0 {
					p.took = time.Since(p.heard)
				}
				p.healed = append(p.healed, err)
			},
		})
		require.NoError(t, err)
		t.Cleanup(func() { p.s.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	for _, p := range players {
		_, err := p.s.Wait(ctx)
		require.NoError(t, err)
	}
	return players
}

// TestARelayWithoutItsSimHealsFromTheMajoritysStateAndThePageSaysWhose: three Go players,
// a relay told not to judge by re-simulating (--no-arbiter): the majority's hash decides,
// a majority player's state heals player 3, and the watch page names that player.
func TestARelayWithoutItsSimHealsFromTheMajoritysStateAndThePageSaysWhose(t *testing.T) {
	t.Parallel() // waits on a relay's clock, a browser and another process more than it computes
	if testing.Short() {
		t.Skip("starts a relay process and a browser")
	}
	bin := tickrelayBin(t)
	dir, addr := t.TempDir(), freePort(t)
	startRelay(t, bin, relayArgs(addr, dir, "--no-arbiter")...)
	base := "http://" + addr
	waitReady(t, base)
	allow := true
	resp, err := relay.PostMatch(context.Background(), http.DefaultClient, base, "k", relay.CreateRequest{Sim: "skirmish", SimVersion: 1, Players: 3, MaxDurationSeconds: 5,
		Options: relay.MatchOptions{PeerHeals: &allow}})
	require.NoError(t, err)
	b := newBrowser(t)
	b.open(t, resp.WatchURL)

	players := playWithOneWrong(t, resp, 3, 50)
	assert.Empty(t, players[0].healed)
	assert.Empty(t, players[1].healed)
	require.Equal(t, []error{nil}, players[2].healed, "player 3 was healed, once")
	assert.Equal(t, players[0].s.Sim().Hash(), players[2].s.Sim().Hash(), "one game at the end")

	b.waitFor(t, `window.tickrelay.banners.some((s) => s.startsWith("HEAL for tick"))`, browserTimeout)
	assert.Regexp(t, `HEAL for tick \d+: player 3 restored the right state after tick \d+ \(from player [12]'s state, unverified: only the majority's hash vouches for it\) and plays on in sync`, banners(t, b))

	rp, err := replay.LoadFile(filepath.Join(dir, resp.MatchID+".tkr"))
	require.NoError(t, err)
	require.Len(t, rp.Heals, 1)
	assert.Contains(t, []uint32{1, 2}, rp.Heals[0].GetSource(), "a majority player's state")
	assert.True(t, rp.Heals[0].GetUnverified())
	_, err = replay.Verify(rp, replay.VerifyOptions{})
	require.NoError(t, err)
}
