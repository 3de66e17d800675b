package e2e_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/web"
)

// The browser tests drive Debian's chromium headless through chromedp: the pages run the
// real bundle (embedded from web/static/build by make web) against a real relay. They
// skip without chromium or the bundle, unless TICKRELAY_CROSS=require (CI), which makes
// a missing tool a failure. Each test saves what a person would see under out/browser/.

const browserTimeout = 90 * time.Second

// needBrowser returns chromium's path, or skips (fails when tools are required).
func needBrowser(t *testing.T) string {
	t.Helper()
	missing := func(msg string) {
		if os.Getenv("TICKRELAY_CROSS") == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if !web.Built() {
		missing("the web app is not built into this test binary: run make web (make test does)")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing("no chromium on PATH (apt-get install chromium)")
	return ""
}

// browser is one headless chromium with a fresh profile; it records every console
// error, failed load and uncaught exception of its page.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := needBrowser(t)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers often give /dev/shm 64 MiB
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{ctx: ctx}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s (%s:%d)", m.String(), m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
	})
	return b
}

// open navigates to url.
func (b *browser) open(t *testing.T, url string) {
	t.Helper()
	require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(url)))
}

// eval evaluates a JavaScript expression into out (JSON-decoded).
func (b *browser) eval(t *testing.T, expr string, out any) {
	t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr))
	require.NoError(t, err, "evaluating %s", expr)
	require.NoError(t, json.Unmarshal(raw, out), "decoding %s: %s", expr, raw)
}

// waitFor polls a JavaScript condition until it holds, failing with the page's banners
// and hook after the deadline.
func (b *browser) waitFor(t *testing.T, cond string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var ok bool
		b.eval(t, fmt.Sprintf("!!(%s)", cond), &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var hook any
			b.eval(t, "window.tickrelay ?? null", &hook)
			t.Fatalf("the page never reached %s within %s; its state: %v; console problems: %v", cond, within, hook, b.console())
		}
		time.Sleep(50 * time.Millisecond) // polling a page with a deadline: nothing to wait on but its state
	}
}

func (b *browser) console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// noProblems fails the test on any console error or uncaught exception the page had.
func (b *browser) noProblems(t *testing.T) {
	t.Helper()
	require.Empty(t, b.console(), "the page logged errors or threw")
}

// screenshot saves the viewport as out/browser/<name>.png for a reviewer.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	dir := filepath.Join(repoRoot, "out", "browser")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// testRelay is a relay served in process, as serve runs it: the relay's handler (the
// match API, the WebSocket endpoint and the web app) on a loopback listener.
type testRelay struct {
	base string
	dir  string
	srv  *relay.Server
}

const testAdminKey = "browser-test"

func startTestRelay(t *testing.T, tickRate int) *testRelay {
	t.Helper()
	return startTestRelayWith(t, tickRate, relay.Options{})
}

// startTestRelayWith is startTestRelay with more of the relay's options (o's replay
// directory, admin key, token secret and match clock are the test relay's).
func startTestRelayWith(t *testing.T, tickRate int, o relay.Options) *testRelay {
	t.Helper()
	secret, err := hex.DecodeString(testTokenSecret)
	require.NoError(t, err)
	o.ReplayDir, o.AdminKey, o.TokenSecret = t.TempDir(), testAdminKey, secret
	o.Match.TickRate, o.Match.LobbyTimeout, o.Match.MaxDuration = tickRate, 30*time.Second, time.Hour
	srv, err := relay.New(o, zap.NewNop())
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		hs.Close()
	})
	return &testRelay{base: hs.URL, dir: o.ReplayDir, srv: srv}
}

// testTokenSecret signs the test relay's tokens (hex), so a test can forge an expired one.
const testTokenSecret = "62726f777365722d746573742d736563726574"

func (r *testRelay) create(t *testing.T, req relay.CreateRequest) *relay.CreateResponse {
	t.Helper()
	resp, err := relay.PostMatch(context.Background(), nil, r.base, testAdminKey, req)
	require.NoError(t, err)
	require.NotEmpty(t, resp.WatchURL)
	if web.Playable(req.Sim) {
		require.Len(t, resp.PlayURLs, req.Players)
	} else {
		require.Empty(t, resp.PlayURLs, "no play page for a sim it cannot play")
	}
	return resp
}

// ticks returns how many ticks the match has sealed, from the match API.
func (r *testRelay) ticks(t *testing.T, id string) uint64 {
	t.Helper()
	hr, err := http.NewRequest(http.MethodGet, r.base+"/v1/matches/"+id, nil)
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+testAdminKey)
	res, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	defer res.Body.Close()
	var info relay.MatchInfo
	require.NoError(t, json.NewDecoder(res.Body).Decode(&info))
	return info.Ticks
}

func (r *testRelay) replayPath(id string) string { return filepath.Join(r.dir, id+".tkr") }

// hookString reads one field of the page's test hook as a string.
func (b *browser) hookString(t *testing.T, field string) string {
	t.Helper()
	var s string
	b.eval(t, "String(window.tickrelay."+field+")", &s)
	return s
}

func banners(t *testing.T, b *browser) string {
	t.Helper()
	var s []string
	b.eval(t, "window.tickrelay.banners", &s)
	return strings.Join(s, "\n")
}
