package e2e_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/internal/lib/netem"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// TestThePlayPageShowsOwnOrdersAtOnceBehindA40msLink is the prediction issue's browser
// proof: the page reaches the relay through a proxy that holds every chunk 40 ms each way
// (the load tester's --net-delay). At the right-click the selected units have their order
// in the state the page draws, though the game (the confirmed sim) gets it a round trip
// and an input delay later — at least 80 ms, which the page's overlay shows beside it.
func TestThePlayPageShowsOwnOrdersAtOnceBehindA40msLink(t *testing.T) {
	t.Parallel() // waits on a relay's clock and a browser more than it computes
	const delay = 40 * time.Millisecond
	b := newBrowser(t)
	seed := uint64(5)
	_, resp, opponent := liveMatch(t, 30, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Params: quickParams(t), MaxDurationSeconds: 10}, 1)
	link, err := url.Parse(resp.PlayURLs[0])
	require.NoError(t, err)
	px, err := netem.Start(link.Host, delay, 0)
	require.NoError(t, err)
	defer px.Close()
	link.Host = px.Addr() // the page, its script and its WebSocket all come through the slow link
	b.open(t, link.String())
	b.waitFor(t, "window.tickrelay.live && window.tickrelay.tick > 20", browserTimeout)

	require.NoError(t, chromedp.Do(b.ctx, chromedp.KeyEvent("a")))
	var box struct{ X, Y, W, H float64 }
	b.eval(t, `(() => { const r = document.getElementById("view").getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`, &box)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.MouseClickXY(box.X+box.W/3, box.Y+box.H/3, chromedp.ButtonRight)))
	var order struct{ Named, Head, Confirmed int }
	b.eval(t, "window.tickrelay.lastOrder", &order)
	require.Positive(t, order.Named, "the order named the selected units")
	assert.Equal(t, order.Named, order.Head, "every selected unit shows its order at the click")
	assert.Zero(t, order.Confirmed, "the game has not got it yet")

	b.waitFor(t, "window.tickrelay.confirmedMs > 0", 10*time.Second)
	var confirmedMs float64
	b.eval(t, "window.tickrelay.confirmedMs", &confirmedMs)
	assert.GreaterOrEqual(t, confirmedMs, float64(2*delay/time.Millisecond), "the game took it a round trip later at least")
	b.waitFor(t, `/your orders show\s+at once \(predicted\), in the game after \d+ ms/.test(document.getElementById("panel").innerText)`, 5*time.Second)
	var eased int
	b.eval(t, "window.tickrelay.eased || 0", &eased)
	t.Logf("behind %v each way: the order shown at the click, in the game after %.0f ms; %d unit corrections eased", delay, confirmedMs, eased)
	b.screenshot(t, "play-net-delay")

	endsInSync(t, b, opponent)
	b.noProblems(t)
}
