package e2e_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/skirmish"
)

// TestThePagesFitAPhone opens the play and watch pages of a live match on a phone's
// screen (390 × 844 CSS pixels, touch, 3× pixels): nothing scrolls sideways, the map
// takes the width, and the panel comes under it, not beside it.
func TestThePagesFitAPhone(t *testing.T) {
	t.Parallel() // waits on a relay's clock and a browser more than it computes
	b := newBrowser(t)
	seed := uint64(3)
	_, resp, _ := liveMatch(t, 30, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Params: quickParams(t), MaxDurationSeconds: 8}, 1)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile)))
	for _, page := range []struct{ name, url string }{{"play", resp.PlayURLs[0]}, {"watch", resp.WatchURL}} {
		b.open(t, page.url)
		b.waitFor(t, "window.tickrelay.live && window.tickrelay.frames > 3", browserTimeout)
		var fit struct {
			ScrollWidth, Width   float64
			ViewWidth, ViewBelow float64 // the map's width; how far below the map's bottom the panel starts
		}
		b.eval(t, `(() => {
			const v = document.getElementById("view").getBoundingClientRect();
			const a = document.querySelector("aside").getBoundingClientRect();
			return {ScrollWidth: document.documentElement.scrollWidth, Width: innerWidth, ViewWidth: v.width, ViewBelow: a.top - v.bottom};
		})()`, &fit)
		assert.LessOrEqual(t, fit.ScrollWidth, fit.Width, "%s: nothing scrolls sideways", page.name)
		assert.GreaterOrEqual(t, fit.ViewWidth, 0.9*fit.Width, "%s: the map takes the width", page.name)
		assert.GreaterOrEqual(t, fit.ViewBelow, 0.0, "%s: the panel is under the map", page.name)
		b.screenshot(t, page.name+"-phone")
	}
	b.noProblems(t)
}
