package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// TestThePagesFitAPhone opens the play and watch pages of a live match on a phone's
// screen (390 × 844 CSS pixels, touch, 3× pixels): nothing scrolls sideways, the map
// takes the width, and the panel comes under it, not beside it.
func TestThePagesFitAPhone(t *testing.T) {
	t.Parallel() // waits on a relay's clock and a browser more than it computes
	b := newBrowser(t)
	seed := uint64(3)
	_, resp, _ := liveMatch(t, 30, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Params: quickParams(t), MaxDurationSeconds: 20}, 1)
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
		if page.name == "play" {
			playByTouch(t, b)
		}
	}
	b.noProblems(t)
}

// playByTouch plays the open play page with a finger: the soldier button buys one, a
// drag over the whole map selects the army, a tap on the middle sends it there.
func playByTouch(t *testing.T, b *browser) {
	t.Helper()
	type rect struct{ X, Y, W, H float64 }
	var button, view rect
	const rectOf = `(s => { const e = document.querySelector(s); e.scrollIntoView({block: "nearest"}); const r = e.getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height}; })`
	b.eval(t, rectOf+`('#orders button[data-action="soldier"]')`, &button)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.TapXY(button.X+button.W/2, button.Y+button.H/2)))
	b.waitFor(t, "window.tickrelay.placed >= 1", 10*time.Second)

	b.eval(t, rectOf+`('#view')`, &view)
	finger := func(typ input.DispatchTouchEventType, x, y float64) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			p := input.DispatchTouchEventParams{Type: typ, TouchPoints: []*input.TouchPoint{}}
			if typ != input.DispatchTouchEventTypeTouchEnd { // a touchEnd has no points
				id := 0.0
				p.TouchPoints = []*input.TouchPoint{{X: view.X + x*view.W, Y: view.Y + y*view.H, ID: &id}}
			}
			_, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, p)
			return err
		})
	}
	drag := []chromedp.Action[chromedp.Void]{finger(input.DispatchTouchEventTypeTouchStart, 0.01, 0.01)}
	for i := 1; i <= 10; i++ {
		at := 0.01 + 0.098*float64(i)
		drag = append(drag, finger(input.DispatchTouchEventTypeTouchMove, at, at))
	}
	drag = append(drag, finger(input.DispatchTouchEventTypeTouchEnd, 0, 0))
	require.NoError(t, chromedp.Do(b.ctx, drag...))
	var selected int
	b.eval(t, "window.tickrelay.selected", &selected)
	require.Positive(t, selected, "the drag selected the player's units")

	require.NoError(t, chromedp.Do(b.ctx, finger(input.DispatchTouchEventTypeTouchStart, 0.5, 0.5), finger(input.DispatchTouchEventTypeTouchEnd, 0, 0)))
	var order struct{ Named, Head int }
	b.eval(t, "window.tickrelay.lastOrder", &order)
	assert.Equal(t, selected, order.Named, "the tap ordered the selected units")
	assert.Positive(t, order.Head, "the order shows at once")
	b.waitFor(t, "window.tickrelay.placed >= 2", 10*time.Second)
	b.screenshot(t, "play-phone-touch")
}
