package e2e_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// watchAfter plays a match with bots and opens its watch link once the match sealed
// ticks ticks; it returns when the page drew its first live frame.
func watchAfter(t *testing.T, tickRate int, req relay.CreateRequest, ticks uint64) (*browser, []*bot.Player) {
	t.Helper()
	b := newBrowser(t)
	r, resp, bots := liveMatch(t, tickRate, req, 0)
	require.Eventually(t, func() bool { return r.ticks(t, resp.MatchID) >= ticks }, browserTimeout, 10*time.Millisecond)
	b.open(t, resp.WatchURL)
	b.waitFor(t, "window.tickrelay.firstLiveFrameMs > 0", browserTimeout)
	return b, bots
}

// TestBrowserNumbers measures what docs/performance.md quotes for the web app: the time
// from opening a watch link to the first live frame, frames drawn per second at 30 Hz
// with 8 players, and how fast a late joiner catches up. It asserts nothing about speed
// (the numbers depend on the machine) and runs only with TICKRELAY_WEB_NUMBERS=1.
func TestBrowserNumbers(t *testing.T) {
	if os.Getenv("TICKRELAY_WEB_NUMBERS") != "1" {
		t.Skip("set TICKRELAY_WEB_NUMBERS=1 to measure the web app")
	}
	seed := uint64(9)

	// Fresh join at 30 Hz, 8 players: first live frame, then frames per second.
	b, bots := watchAfter(t, 30, relay.CreateRequest{Sim: skirmish.Name, Players: 8, SeedOpt: &seed, MaxDurationSeconds: 25}, 30)
	var joinMs, firstMs float64
	b.eval(t, "window.tickrelay.joinMs", &joinMs)
	b.eval(t, "window.tickrelay.firstLiveFrameMs", &firstMs)
	var f0, f1 float64
	b.eval(t, "window.tickrelay.frames", &f0)
	start := time.Now()
	time.Sleep(10 * time.Second) // a measurement window, not a wait for a condition
	b.eval(t, "window.tickrelay.frames", &f1)
	fps := (f1 - f0) / time.Since(start).Seconds()
	var ended string
	b.eval(t, "window.tickrelay.ended", &ended)
	require.Empty(t, ended, "the match must run through the measurement window")
	waitBots(t, bots)

	// A late joiner: 8 players at 300 Hz build a backlog fast; the page catches up, then draws live.
	late, bots2 := watchAfter(t, 300, relay.CreateRequest{Sim: skirmish.Name, Players: 8, SeedOpt: &seed, MaxDurationSeconds: 40}, 5000)
	var caught, rate float64
	late.eval(t, "window.tickrelay.catchUpTicks", &caught)
	late.eval(t, "window.tickrelay.catchUpTicksPerSecond", &rate)
	waitBots(t, bots2)

	// The replay page's verification pass: a 20,000-tick file re-simulated in the page.
	rb := newBrowser(t)
	openReplay(t, rb, servePages(t), recordFile(t, "20000"))
	rb.waitFor(t, "window.tickrelay.verified === true", browserTimeout)
	var resim float64
	rb.eval(t, "window.tickrelay.resimTicksPerSecond", &resim)

	t.Logf("replay page: verified 20,000 ticks at %.0f ticks/s", resim)
	t.Logf("watch link → first live frame: %.0f ms from navigation start (%.0f ms after the script started joining)", firstMs, joinMs)
	t.Logf("frames drawn per second at 30 Hz, 8 players: %.1f", fps)
	t.Logf("late join: caught up %.0f ticks at %.0f ticks/s", caught, rate)
	b.noProblems(t)
	late.noProblems(t)
	rb.noProblems(t)
}
