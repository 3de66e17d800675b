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
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// quickParams is a small, rich skirmish: armies are bought at once and meet soon.
func quickParams(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&skirmishv1.Params{MapSize: 128, StartResource: 1500})
	require.NoError(t, err)
	return b
}

func TestThePlayPageSendsOrdersThatLandInTheReplayUnderItsSlotAndSurvivesADrop(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	seed := uint64(11)
	r, resp, opponent := liveMatch(t, 30, relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Params: quickParams(t), MaxDurationSeconds: 14}, 1)
	b.open(t, resp.PlayURLs[0]) // the person is player 1
	b.waitFor(t, "window.tickrelay.live && window.tickrelay.tick > 20", browserTimeout)

	// Buy a soldier and an archer, select the army, send it to the middle of the map.
	require.NoError(t, chromedp.Do(b.ctx, chromedp.KeyEvent("1"), chromedp.KeyEvent("2"), chromedp.KeyEvent("a")))
	var box struct{ X, Y, W, H float64 }
	b.eval(t, `(() => { const r = document.getElementById("view").getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`, &box)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.MouseClickXY(box.X+box.W/2, box.Y+box.H/2, chromedp.ButtonRight)))
	// The page predicts: at the click, the units' move order is in the state it draws (the
	// head) and not yet in the confirmed sim, whose frame comes back ticks later.
	var order struct{ Named, Head, Confirmed int }
	b.eval(t, "window.tickrelay.lastOrder", &order)
	require.Positive(t, order.Named, "the order named the selected units")
	// The two units bought a moment before are in the head already (selected by "a"); the
	// move may target an earlier tick than they were bought for (the relay's suggested
	// delay fell in between), where they do not exist yet — in the head as in the game. At
	// least the others show the order at once.
	assert.GreaterOrEqual(t, order.Head, order.Named-2, "the selected units show their order at once")
	assert.Positive(t, order.Head)
	assert.Zero(t, order.Confirmed, "before the relay sealed it")
	b.waitFor(t, "window.tickrelay.placed >= 3", 10*time.Second)
	b.waitFor(t, `document.getElementById("panel").innerText.includes("3 placed")`, 5*time.Second)
	b.waitFor(t, `/prediction\s+\d+ rollbacks/.test(document.getElementById("panel").innerText)`, 5*time.Second)
	b.screenshot(t, "play-orders")

	// A dropped connection shows and comes back by itself; orders flow again.
	b.eval(t, "window.tickrelay.drop(), true", new(bool))
	b.waitFor(t, `window.tickrelay.reconnects >= 1 && window.tickrelay.connection === "connected"`, 20*time.Second)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.KeyEvent("s")))
	b.waitFor(t, "window.tickrelay.placed >= 4", 10*time.Second)
	b.waitFor(t, `document.getElementById("panel").innerText.includes("4 placed")`, 5*time.Second)
	b.screenshot(t, "play-reconnected")

	endsInSync(t, b, opponent) // in sync through the drop
	assert.Contains(t, banners(t, b), "reconnected")

	// Every order the page placed is in the replay, under slot 1, as a skirmish command.
	rp, err := replay.LoadFile(r.replayPath(resp.MatchID))
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, f := range rp.Frames {
		for _, c := range f.Commands {
			if c.Player != 1 {
				continue
			}
			var cmd skirmishv1.Command
			require.NoError(t, proto.Unmarshal(c.Payload, &cmd))
			switch o := cmd.GetOrder().(type) {
			case *skirmishv1.Command_Spawn:
				kinds["spawn "+o.Spawn.GetKind().String()]++
			case *skirmishv1.Command_Move:
				kinds["move"]++
				assert.Equal(t, int32(64), o.Move.GetX(), "the right-click was on the middle of a 128-unit map")
				assert.NotEmpty(t, o.Move.GetUnits())
			case *skirmishv1.Command_Stop:
				kinds["stop"]++
			}
		}
	}
	var placed int
	b.eval(t, "window.tickrelay.placed", &placed)
	assert.Equal(t, map[string]int{"spawn KIND_SOLDIER": 1, "spawn KIND_ARCHER": 1, "move": 1, "stop": 1}, kinds)
	assert.Equal(t, 4, placed)
	b.noProblems(t)
}
