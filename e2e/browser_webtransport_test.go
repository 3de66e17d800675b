package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// The play and watch pages over WebTransport, against a real `tickrelay serve
// --webtransport` (its self-signed certificate pinned by the hashes the links carry),
// and the fallback to WebSocket when the endpoint never answers (UDP blocked). The
// browser is the other tests' (--disable-quic): that flag turns off QUIC for HTTP, and
// WebTransport, a QUIC of its own, works with it on.

// webTransportMatch starts a relay process serving WebTransport, creates a skirmish
// match of two, and plays slot 2 with a scripted bot (over WebSocket: one match mixes
// both transports).
// It returns the relay's admin address too (its metrics).
func webTransportMatch(t *testing.T, seconds int) (*relay.CreateResponse, []*bot.Player, string) {
	t.Helper()
	addr, admin := freePort(t), freePort(t)
	startRelay(t, tickrelayBin(t), relayArgs(addr, t.TempDir(), "--tick-rate", "30", "--webtransport", "127.0.0.1:0", "--admin", admin)...)
	base := "http://" + addr
	waitReady(t, base)
	seed := uint64(23)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: skirmish.Name, Players: 2, SeedOpt: &seed, Params: quickParams(t), MaxDurationSeconds: seconds})
	require.NoError(t, err)
	require.NotNil(t, resp.WebTransport, "the relay offers WebTransport")
	require.Contains(t, resp.PlayURLs[0], "&wt_hash=", "the link carries the certificate's hashes")
	return resp, playBots(t, resp, 1, seed), admin
}

// metric is the value of one sample of the relay's metrics page ("" when it has none).
func metric(t *testing.T, admin, sample string) string {
	t.Helper()
	res, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			return v
		}
	}
	return ""
}

func TestThePlayAndWatchPagesRunAMatchOverWebTransport(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	resp, opponent, admin := webTransportMatch(t, 10)
	b.open(t, resp.PlayURLs[0])
	b.waitFor(t, `window.tickrelay.transport === "webtransport" && window.tickrelay.live && window.tickrelay.tick > 30`, browserTimeout)
	b.waitFor(t, `/transport\s+WebTransport/.test(document.getElementById("panel").innerText)`, 5*time.Second)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.KeyEvent("1")))
	b.waitFor(t, "window.tickrelay.placed >= 1", 10*time.Second)
	// A dropped session comes back by itself, over WebTransport again.
	b.eval(t, "window.tickrelay.drop(), true", new(bool))
	b.waitFor(t, `window.tickrelay.reconnects >= 1 && window.tickrelay.connection === "connected" && window.tickrelay.transport === "webtransport"`, 20*time.Second)

	// A spectator in a second tab: the stream alone, over WebTransport too.
	wctx, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	w := &browser{ctx: wctx}
	w.open(t, resp.WatchURL)
	w.waitFor(t, `window.tickrelay.transport === "webtransport" && window.tickrelay.live`, browserTimeout)
	b.screenshot(t, "play-webtransport")
	t.Logf("the play page drew live %s ms after it began joining, over WebTransport", b.hookString(t, "joinMs"))

	var dg struct{ Received, FramesFirst, Malformed, Sent int }
	b.eval(t, "window.tickrelay.datagrams", &dg)
	assert.Positive(t, dg.Received, "frames datagrams reached the page")
	assert.Positive(t, dg.Sent, "the page's orders went as datagrams too")
	// The bot plays over WebSocket: what datagrams the relay received are the page's.
	assert.Eventually(t, func() bool {
		return !slices.Contains([]string{"", "0"}, metric(t, admin, "tickrelay_datagrams_received_total"))
	}, 5*time.Second, 50*time.Millisecond, "the relay received the page's command datagrams")
	assert.Equal(t, "0", metric(t, admin, `tickrelay_datagrams_dropped_total{reason="malformed"}`), "and none was malformed")
	assert.Zero(t, dg.Malformed)
	tick := endsInSync(t, b, opponent)
	b.eval(t, "window.tickrelay.datagrams", &dg)
	t.Logf("the play page's datagrams: %d received, %d frames applied from them before the stream's copy, %d malformed; %d command datagrams sent", dg.Received, dg.FramesFirst, dg.Malformed, dg.Sent)
	w.waitFor(t, fmt.Sprintf("window.tickrelay.tick === %d", tick), 10*time.Second)
	assert.Equal(t, b.hookString(t, "hash"), w.hookString(t, "hash"), "the spectator ends on the player's hash")
	assert.Equal(t, "webtransport", b.hookString(t, "transport"), "no fallback on the way")
	assert.NotContains(t, banners(t, b), "DESYNC")
	b.noProblems(t)
}

func TestThePlayPageFallsBackToWebSocketWhenUDPIsBlocked(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	resp, opponent, _ := webTransportMatch(t, 8)
	// A UDP socket that reads and never answers: what a network that drops UDP looks
	// like to the browser. The link names it instead of the relay's endpoint.
	hole, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { hole.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := hole.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	link, err := url.Parse(resp.PlayURLs[0])
	require.NoError(t, err)
	frag, err := url.ParseQuery(link.Fragment)
	require.NoError(t, err)
	wt, err := url.Parse(frag.Get("wt"))
	require.NoError(t, err)
	wt.Host = hole.LocalAddr().String()
	frag.Set("wt", wt.String())
	link.Fragment = ""
	b.open(t, link.String()+"#"+frag.Encode())

	b.waitFor(t, `window.tickrelay.transport === "websocket" && window.tickrelay.live && window.tickrelay.tick > 30`, browserTimeout)
	assert.Contains(t, b.hookString(t, "webTransportError"), "no WebTransport session within 3000 ms", "the page says why")
	b.waitFor(t, `/transport\s+WebSocket \(WebTransport: /.test(document.getElementById("panel").innerText)`, 5*time.Second)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.KeyEvent("1")))
	b.waitFor(t, "window.tickrelay.placed >= 1", 10*time.Second)
	b.screenshot(t, "play-webtransport-fallback")
	t.Logf("the play page drew live %s ms after it began joining, over WebSocket after WebTransport's timeout", b.hookString(t, "joinMs"))
	endsInSync(t, b, opponent)
	assert.False(t, strings.Contains(banners(t, b), "DESYNC"))
}
