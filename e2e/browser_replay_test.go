package e2e_test

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/stream"
	"github.com/tickrelay/tickrelay/web"
)

// servePages serves the app alone (the replay page needs no relay).
func servePages(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(web.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// openReplay opens a file on the replay page through its file picker.
func openReplay(t *testing.T, b *browser, base, path string) {
	t.Helper()
	b.open(t, base+web.ReplayPath)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.WaitReady(chromedp.ID("file")), chromedp.SetUploadFiles(chromedp.ID("file"), []string{path})))
}

// gotoTick types a tick into the page's tick box and presses Enter.
func gotoTick(t *testing.T, b *browser, tick uint64) {
	t.Helper()
	require.NoError(t, chromedp.Do(b.ctx, chromedp.SetValue(chromedp.ID("goto"), fmt.Sprint(tick)), chromedp.SendKeys(chromedp.ID("goto"), "\r")))
	b.waitFor(t, fmt.Sprintf("window.tickrelay.tick === %d", tick), 20*time.Second)
}

func TestTheReplayPageVerifiesAFileAndSeeksToTheHashReplaySeekPrints(t *testing.T) {
	t.Parallel() // computes while the others wait on clocks and processes
	b := newBrowser(t)
	base := servePages(t)
	path := recordFile(t, "3000")
	openReplay(t, b, base, path)
	b.waitFor(t, "window.tickrelay.verified === true", browserTimeout)
	var badge string
	b.eval(t, `document.getElementById("verified").textContent`, &badge)
	rp, err := replay.LoadFile(path)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("verified: %d checkpoints match the re-simulation", len(rp.Checkpoints)), badge)

	// After verifying, the page shows tick 0's state. (It showed the last tick's, labelled
	// tick 0: the verification left the sim at the end.)
	out, code := run(t, "replay", "seek", path, "--tick", "0")
	require.Equal(t, 0, code)
	b.waitFor(t, "window.tickrelay.tick === 0", browserTimeout)
	assert.Equal(t, strings.TrimSpace(out), "tick 0 hash "+b.hookString(t, "hash"), "the page shows tick 0 after verifying")

	// Forward past several snapshots, then back: the page restores a snapshot and steps.
	for _, tick := range []uint64{2345, 77, 1200} {
		gotoTick(t, b, tick)
		out, code := run(t, "replay", "seek", path, "--tick", fmt.Sprint(tick))
		require.Equal(t, 0, code)
		assert.Equal(t, strings.TrimSpace(out), fmt.Sprintf("tick %d hash %s", tick, b.hookString(t, "hash")), "the page and replay seek agree at tick %d", tick)
	}
	// Play at 16x for a moment: the ticks move on.
	require.NoError(t, chromedp.Do(b.ctx, chromedp.SetValue(chromedp.ID("speed"), "16"), chromedp.Click(chromedp.ID("play"))))
	b.waitFor(t, "window.tickrelay.tick > 1300", 20*time.Second)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.Click(chromedp.ID("play"))))
	b.screenshot(t, "replay-verified")
	b.noProblems(t)
}

func TestTheReplayPageShowsWhereACorruptFileIsUnreadable(t *testing.T) {
	t.Parallel() // computes while the others wait on clocks and processes
	b := newBrowser(t)
	base := servePages(t)
	b.open(t, base)
	b.screenshot(t, "index")
	good, err := os.ReadFile(recordFile(t, "2000"))
	require.NoError(t, err)
	// Cut the file in two and glue garbage between the halves.
	at := len(good) / 2
	bad := append(append(append([]byte(nil), good[:at]...), 0xff, 0xff, 0xff, 0xff, 0x0f), good[at:]...)
	// Dropped on the page, as a person would drag it there.
	b.open(t, base+web.ReplayPath)
	require.NoError(t, chromedp.Do(b.ctx, chromedp.WaitReady(chromedp.ID("file"))))
	b.eval(t, fmt.Sprintf(`(() => {
		const bytes = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], "corrupt.tkr"));
		window.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, cancelable: true }));
		return true;
	})()`, base64.StdEncoding.EncodeToString(bad)), new(bool))
	b.waitFor(t, "window.tickrelay.problem && document.getElementById('verified')", browserTimeout)
	var problem struct {
		Kind      string
		Offset    int
		AfterTick int
	}
	b.eval(t, "window.tickrelay.problem", &problem)
	assert.Equal(t, "corrupt", problem.Kind)
	// At the start of the crc block the garbage is in: the block's records are not
	// believed, and every record before it reads.
	assert.LessOrEqual(t, problem.Offset, at, "the reader stops at the garbage's block")
	assert.Less(t, at-problem.Offset, stream.MaxBlock, "the reader stops at the garbage's block")
	assert.Contains(t, banners(t, b), fmt.Sprintf("corrupt.tkr is unreadable at byte %d (after tick %d)", problem.Offset, problem.AfterTick))
	// Go's reader stops at the same byte.
	_, err = replay.Load(strings.NewReader(string(bad)))
	var corrupt *replay.CorruptError
	require.ErrorAs(t, err, &corrupt)
	assert.Equal(t, int(corrupt.Offset), problem.Offset, "the page's reader and Go's stop at the same byte")
	b.screenshot(t, "replay-corrupt")
	b.noProblems(t)
}

func TestAWrongOrExpiredTokenShowsTheRelaysErrorInThePage(t *testing.T) {
	t.Parallel() // waits on a relay's clock or another process more than it computes
	b := newBrowser(t)
	r := startTestRelay(t, 30)
	resp := r.create(t, relay.CreateRequest{Sim: "skirmish", Players: 2})
	watch := strings.SplitN(resp.WatchURL, "#", 2)[0]

	b.open(t, watch+"#token=not-a-token")
	b.waitFor(t, `window.tickrelay.ended === "refused"`, 20*time.Second)
	assert.Contains(t, banners(t, b), "the relay refused this link: ")
	assert.Contains(t, banners(t, b), "token")
	b.screenshot(t, "watch-bad-token")

	secret, err := hex.DecodeString(testTokenSecret)
	require.NoError(t, err)
	tokens, err := relay.NewTokens(secret)
	require.NoError(t, err)
	id, err := uuid.Parse(resp.MatchID)
	require.NoError(t, err)
	expired := tokens.Issue(relay.Claims{Match: id, Role: relay.RoleSpectator, Expiry: time.Now().Add(-time.Minute)})
	b.open(t, "about:blank")
	b.open(t, watch+"#token="+expired)
	b.waitFor(t, `window.tickrelay.ended === "refused"`, 20*time.Second)
	assert.Contains(t, banners(t, b), "token expired at")
	b.screenshot(t, "watch-expired-token")
	b.noProblems(t)
}
