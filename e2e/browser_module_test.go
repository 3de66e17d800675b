package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/testkit/simbuild"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

// TestTheWatchPageRunsTheRelaysOwnModuleOfASimTheAppDoesNotShip: a relay given a game
// author's module (here the C grid game of internal/testkit/testsim) serves it to its
// pages, so the watch page steps it in the browser beside the bots, ends on their hash
// and shows the module's dump; the match API gives no play links for it.
func TestTheWatchPageRunsTheRelaysOwnModuleOfASimTheAppDoesNotShip(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	dir := t.TempDir()
	src := filepath.Join(simbuild.Root(), "internal", "testkit", "testsim", "grid", "grid.c")
	path := simbuild.C(t, src, dir, "grid.wasm")
	payloads, err := os.ReadFile(filepath.Join(filepath.Dir(src), "grid.payloads"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grid.payloads"), payloads, 0o644))
	_, err = wasm.RegisterDir(dir, nil) // the bots' sim, with its sample commands
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	metered, err := meter.Meter(raw)
	require.NoError(t, err)

	r := startTestRelayWith(t, 60, relay.Options{PageModules: map[string][]byte{"grid.wasm": metered}})
	seed := uint64(3)
	resp := r.create(t, relay.CreateRequest{Sim: "grid", SimVersion: 1, Players: 2, SeedOpt: &seed, MaxDurationSeconds: 6})
	assert.Empty(t, resp.PlayURLs, "the play page has no orders for this sim")
	bots := playBots(t, resp, 0, seed)
	b.open(t, resp.WatchURL)
	b.waitFor(t, "window.tickrelay.live && window.tickrelay.tick > 120", browserTimeout)
	b.waitFor(t, "window.tickrelay.dumpLines === 3", 5*time.Second) // two players and the coin, drawn
	b.screenshot(t, "watch-module-grid")
	last := endsInSync(t, b, bots)
	// At the end a full list of agreed checkpoints sits above the dump; the dump is still
	// drawn (the list gives way), the state the watcher came for.
	b.waitFor(t, fmt.Sprintf("window.tickrelay.shownTick === %d && window.tickrelay.dumpLines === 3", last), 10*time.Second)
	b.screenshot(t, "watch-module-grid-ended")
	assert.NotContains(t, banners(t, b), "no module")
	var panel string
	b.eval(t, `document.getElementById("panel").innerText`, &panel)
	assert.Contains(t, panel, "grid v1")
	assert.Regexp(t, `checkpoint\s+\d+ [0-9a-f]{16} ✓ agrees`, panel)

	// The replay page of the same relay re-simulates the file with the same module.
	<-r.srv.MatchDone(uuid.MustParse(resp.MatchID))
	openReplay(t, b, r.base, r.replayPath(resp.MatchID))
	b.waitFor(t, "window.tickrelay.verified === true", browserTimeout)
	b.waitFor(t, "window.tickrelay.dumpLines === 3", 5*time.Second)
	b.screenshot(t, "replay-module-grid")
	b.noProblems(t)
}

// TestTheWatchPageOfAMatchInItsLobbySaysItWaits: before the Start record the page knows
// no sim yet, and says it waits rather than that it has no module or no map.
func TestTheWatchPageOfAMatchInItsLobbySaysItWaits(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	r := startTestRelay(t, 30)
	resp := r.create(t, relay.CreateRequest{Sim: skirmish.Name, Players: 2, MaxDurationSeconds: 5})
	b.open(t, resp.WatchURL)
	b.waitFor(t, `window.tickrelay.banners.some((t) => t.startsWith("waiting for the match to start"))`, browserTimeout)
	b.waitFor(t, "window.tickrelay.frames > 0", 5*time.Second)
	b.screenshot(t, "watch-lobby")
	var footnote string
	b.eval(t, "window.tickrelay.footnote", &footnote)
	assert.Equal(t, "waiting for the match to start", footnote, "what the canvas says")
	assert.NotContains(t, banners(t, b), "no module")
	b.noProblems(t)
}

// TestTheEndBannerNamesTheWinnerTheSimKnows: a module's game that ends (the C grid game
// built to end at the first coin) ends the match, and the watch page's banner names the
// winner the module's outcome gives.
func TestTheEndBannerNamesTheWinnerTheSimKnows(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	dir := t.TempDir()
	src := filepath.Join(simbuild.Root(), "internal", "testkit", "testsim", "grid", "grid.c")
	path := simbuild.C(t, src, dir, "gridend.wasm", "-DWIN=1", "-DFIRST_COIN_X=1", "-DFIRST_COIN_Y=0", `-DSIM_NAME="gridend"`)
	payloads, err := os.ReadFile(filepath.Join(filepath.Dir(src), "grid.payloads"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gridend.payloads"), payloads, 0o644))
	_, err = wasm.RegisterDir(dir, nil)
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	metered, err := meter.Meter(raw)
	require.NoError(t, err)

	r := startTestRelayWith(t, 60, relay.Options{PageModules: map[string][]byte{"gridend.wasm": metered}})
	seed := uint64(4)
	resp := r.create(t, relay.CreateRequest{Sim: "gridend", SimVersion: 1, Players: 2, SeedOpt: &seed, MaxDurationSeconds: 30})
	b.open(t, resp.WatchURL)
	b.waitFor(t, `window.tickrelay.banners.some((t) => t.startsWith("waiting for the match to start"))`, browserTimeout)
	bots := playBots(t, resp, 0, seed)
	b.waitFor(t, `window.tickrelay.ended !== ""`, browserTimeout)
	_, _ = waitBots(t, bots)
	over, winner := bots[0].Session().Sim().(interface{ Outcome() (bool, uint32) }).Outcome()
	require.True(t, over, "the game ended: %s", banners(t, b))
	require.NotZero(t, winner)
	assert.Equal(t, "sim finished", b.hookString(t, "ended"))
	assert.Contains(t, banners(t, b), fmt.Sprintf("; player %d won", winner))
	b.screenshot(t, "watch-winner")
	b.noProblems(t)
}
