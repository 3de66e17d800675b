package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// liveMatch serves a relay at tickRate, creates a match and plays its slots from index
// from on with scripted bots (seeded with the match's seed).
func liveMatch(t *testing.T, tickRate int, req relay.CreateRequest, from int) (*testRelay, *relay.CreateResponse, []*bot.Player) {
	t.Helper()
	r := startTestRelay(t, tickRate)
	resp := r.create(t, req)
	return r, resp, playBots(t, resp, from, resp.Seed)
}

// playBots plays every slot of a match from index from on with scripted bots.
func playBots(t *testing.T, resp *relay.CreateResponse, from int, seed uint64) []*bot.Player {
	t.Helper()
	var bots []*bot.Player
	for _, tok := range resp.PlayerTokens[from:] {
		b, err := bot.Play(context.Background(), resp.URL, tok, seed)
		require.NoError(t, err)
		bots = append(bots, b)
	}
	return bots
}

// waitBots waits for the bots' end and checks they agree; it returns the final tick and hash.
func waitBots(t *testing.T, bots []*bot.Player) (uint64, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	var tick, hash uint64
	for i, b := range bots {
		st, err := b.Wait(ctx)
		require.NoError(t, err)
		require.Zero(t, st.Desyncs)
		if i == 0 {
			tick, hash = st.LastTick, st.FinalHash
		}
		require.Equal(t, tick, st.LastTick, "bot %d", i+1)
		require.Equal(t, hash, st.FinalHash, "bot %d", i+1)
	}
	return tick, hash
}

// endsInSync waits for the match to end and checks that the page's sim ended on the bots'
// last tick and hash; it returns that tick.
func endsInSync(t *testing.T, b *browser, bots []*bot.Player) uint64 {
	t.Helper()
	b.waitFor(t, `window.tickrelay.ended !== ""`, browserTimeout)
	tick, hash := waitBots(t, bots)
	b.waitFor(t, fmt.Sprintf("window.tickrelay.tick === %d", tick), 10*time.Second) // the panel refreshes 4 times a second
	assert.Equal(t, fmt.Sprintf("%016x", hash), b.hookString(t, "hash"), "the page's sim (the module, in the browser) ends on the bots' hash")
	return tick
}

func TestTheWatchPageJoinsALiveMatchLateAndEndsOnTheBotsHash(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	seed := uint64(5)
	// Join late, so the page catches up before it draws live.
	b, bots := watchAfter(t, 60, relay.CreateRequest{Sim: skirmish.Name, Players: 4, SeedOpt: &seed, Params: quickParams(t), MaxDurationSeconds: 9}, 90)
	b.waitFor(t, "window.tickrelay.live && window.tickrelay.tick > 330", browserTimeout)
	// Each player's input delay, which the stream does not carry, comes from the relay.
	b.waitFor(t, `[...document.querySelectorAll("table.players tbody td:nth-child(4)")].filter((td) => /^\d+ ticks?$/.test(td.textContent)).length === 4`, 10*time.Second)
	b.screenshot(t, "watch-live")
	tick := endsInSync(t, b, bots)
	b.screenshot(t, "watch-ended")

	assert.GreaterOrEqual(t, tick, uint64(300))
	var frames, catchUp int
	b.eval(t, "window.tickrelay.frames", &frames)
	b.eval(t, "window.tickrelay.catchUpTicks ?? 0", &catchUp)
	// A headless browser on a loaded machine may draw a few times a second only (24 draws
	// in 9 s were seen): what the page promises is that it draws while the match goes on.
	assert.Greater(t, frames, 5, "the page drew the match as it went")
	assert.Positive(t, catchUp, "a late joiner catches up before drawing live")
	assert.Contains(t, banners(t, b), "the match ended")
	assert.NotContains(t, banners(t, b), "DESYNC")
	b.noProblems(t)
}

func TestTheWatchPageShowsTicksHashesAndCheckpointsOfASimItCannotDraw(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	seed := uint64(2)
	_, resp, bots := liveMatch(t, 60, relay.CreateRequest{Sim: hashchain.Name, Players: 2, SeedOpt: &seed, MaxDurationSeconds: 6}, 0)
	b.open(t, resp.WatchURL)
	b.waitFor(t, "window.tickrelay.live && window.tickrelay.tick > 120", browserTimeout)
	b.screenshot(t, "watch-hashchain")
	endsInSync(t, b, bots)
	var panel string
	b.eval(t, `document.getElementById("panel").innerText`, &panel)
	assert.Contains(t, panel, "hashchain v1")
	assert.Regexp(t, `checkpoint\s+\d+ [0-9a-f]{16} ✓ agrees`, panel)
	b.noProblems(t)
}

func TestTheWatchPageShowsALoudDesyncBannerNamingTheTickAndPlayers(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	seed := uint64(4)
	r := startTestRelay(t, 60)
	resp := r.create(t, relay.CreateRequest{Sim: hashchain.Name, Players: 3, SeedOpt: &seed, MaxDurationSeconds: 4})
	b.open(t, resp.WatchURL)
	firstTwo := *resp
	firstTwo.PlayerTokens = resp.PlayerTokens[:2]
	bots := playBots(t, &firstTwo, 0, seed) // players 1 and 2
	// Player 3 runs the chain from another seed: its checksums disagree from the first checkpoint on.
	odd, err := client.Dial(context.Background(), resp.URL, resp.PlayerTokens[2], &client.Options{
		NewSim: func(st *pb.Start) (sim.Sim, error) {
			return hashchain.New(sim.Config{Seed: st.GetSeed() + 1, Players: len(st.GetPlayers())}), nil
		},
	})
	require.NoError(t, err)
	defer odd.Close()
	b.waitFor(t, `window.tickrelay.banners.some((s) => s.startsWith("DESYNC at tick"))`, browserTimeout)
	b.waitFor(t, `document.getElementById("panel").innerText.match(/desyncs\s+[1-9]/)`, 5*time.Second)
	// Then the relay's forensics: player 3's chain differs from the start (the Go clients
	// answered; the hash chain has no sub-hashes or dump, so the report stops at the tick).
	b.waitFor(t, `window.tickrelay.banners.some((s) => s.startsWith("DESYNC REPORT for tick"))`, browserTimeout)
	b.screenshot(t, "watch-desync")
	text := banners(t, b)
	assert.Regexp(t, `DESYNC at tick \d+: players 1, 2 [0-9a-f]{16} \(majority\) vs player 3 [0-9a-f]{16}`, text)
	assert.Regexp(t, `DESYNC REPORT for tick \d+: the states first differ after tick 0 \(since the start\); fewer than two groups could answer the sub-hashes and dump step \(player 1: the sim writes no dump; player 3: the sim writes no dump\)`, text)
	var cls string
	b.eval(t, `document.querySelector(".banner.desync").className`, &cls)
	assert.Equal(t, "banner desync", cls)
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	for _, bt := range bots {
		st, err := bt.Wait(ctx)
		require.NoError(t, err)
		assert.Positive(t, st.Desyncs, "the bots were told of the desync too")
	}
	b.noProblems(t)
}

func TestTheWatchPageIsHeldBehindByTheSpectatorDelay(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	seed := uint64(6)
	r, resp, bots := liveMatch(t, 60, relay.CreateRequest{Sim: hashchain.Name, Players: 2, SeedOpt: &seed, MaxDurationSeconds: 6, SpectatorDelaySeconds: 2}, 0)
	b.open(t, resp.WatchURL)
	b.waitFor(t, "window.tickrelay.tick > 30", browserTimeout)
	var pageTick int
	b.eval(t, "window.tickrelay.tick", &pageTick)
	assert.GreaterOrEqual(t, int(r.ticks(t, resp.MatchID))-pageTick, 90, "the page is held 2 s (120 ticks) behind the live match")
	var panel string
	b.eval(t, `document.getElementById("panel").innerText`, &panel)
	assert.Regexp(t, `spectator delay\s+120 ticks behind the live match`, panel)
	endsInSync(t, b, bots)
	b.noProblems(t)
}
