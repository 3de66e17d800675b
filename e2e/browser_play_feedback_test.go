package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	skirmishv1 "github.com/tickrelay/tickrelay/proto/skirmish/v1"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// TestThePlayPageSaysWhatAPlayerCannotSeeOtherwise: a purchase the game refuses is said
// at once, the checksums a player's page sends are counted (a player's stream carries no
// agreed checkpoints), and after the end the page says the match ended, not "live" beside
// a warning about the closed connection.
func TestThePlayPageSaysWhatAPlayerCannotSeeOtherwise(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	seed := uint64(12)
	params, err := proto.Marshal(&skirmishv1.Params{MapSize: 128, StartResource: 120})
	require.NoError(t, err)
	_, resp, opponent := liveMatch(t, 30, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Params: params, MaxDurationSeconds: 12}, 1)
	b.open(t, resp.PlayURLs[0])
	b.waitFor(t, "window.tickrelay.live && window.tickrelay.tick > 20", browserTimeout)

	// 120 buys two soldiers of 50; the resource grows slowly, so of six buys pressed at
	// once some are refused (how many depends on how soon the page's orders land: a busy
	// machine's page placed three and the resource had grown past a third), and the page
	// says so.
	for range 6 {
		require.NoError(t, chromedp.Do(b.ctx, chromedp.KeyEvent("1")))
	}
	b.waitFor(t, "window.tickrelay.refusedBuys >= 1", 5*time.Second)
	assert.Regexp(t, `the soldier was not bought: the game refused it \(you have [0-4]?\d resource and \d+ units\)`, banners(t, b), "under the 50 a soldier costs")
	b.waitFor(t, `/checkpoints\s+[1-9]\d* hash(es)? sent by this page/.test(document.getElementById("panel").innerText)`, 10*time.Second)
	b.screenshot(t, "play-refused-buy")

	endsInSync(t, b, opponent)
	b.waitFor(t, `/status\s+ended at tick \d+/.test(document.getElementById("panel").innerText)`, 5*time.Second)
	var warned bool
	b.eval(t, `[...document.querySelectorAll("#panel .warn")].some((e) => e.textContent.startsWith("closed"))`, &warned)
	assert.False(t, warned, "a connection closed by the end is not a warning")
	assert.Equal(t, 0, hookInt(t, b, "drops"), "nor a drop")
	b.screenshot(t, "play-ended")
	b.noProblems(t)
}

func hookInt(t *testing.T, b *browser, field string) int {
	t.Helper()
	var n int
	b.eval(t, "window.tickrelay."+field+" ?? -1", &n)
	return n
}
