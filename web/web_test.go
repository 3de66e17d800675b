package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinksCarryTheTokenInTheFragmentNeverTheQuery(t *testing.T) {
	watch, play, err := Links("ws://127.0.0.1:7400/v1/ws", "/v1/ws", "skirmish", "spec.tok-_", []string{"p1", "p2"})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:7400/watch#token=spec.tok-_", watch)
	assert.Equal(t, []string{"http://127.0.0.1:7400/play#token=p1", "http://127.0.0.1:7400/play#token=p2"}, play)
	u, err := url.Parse(watch)
	require.NoError(t, err)
	assert.Empty(t, u.RawQuery, "a token in the query would reach the server's logs")
}

func TestLinksFollowASecureProxyAndItsPrefix(t *testing.T) {
	watch, play, err := Links("wss://games.example.com/relay/v1/ws", "/v1/ws", "skirmish", "s", []string{"p"})
	require.NoError(t, err)
	assert.Equal(t, "https://games.example.com/relay/watch#token=s", watch)
	assert.Equal(t, []string{"https://games.example.com/relay/play#token=p"}, play)
}

func TestBesideIsTheEndpointsDirectoryOverHTTP(t *testing.T) {
	for ws, want := range map[string]string{
		"ws://127.0.0.1:7400/v1/ws":           "http://127.0.0.1:7400",
		"wss://games.example.com/relay/v1/ws": "https://games.example.com/relay",
		"ws://127.0.0.1:7400/":                "http://127.0.0.1:7400",
	} {
		u, err := Beside(ws, "/v1/ws")
		require.NoError(t, err, ws)
		assert.Equal(t, want, u.String(), ws)
	}
	_, err := Beside("https://games.example.com/v1/ws", "/v1/ws")
	require.ErrorIs(t, err, ErrBadURL)
}

func TestLinksRefuseANonWebSocketURL(t *testing.T) {
	_, _, err := Links("http://127.0.0.1:7400/v1/ws", "/v1/ws", "skirmish", "s", nil)
	require.ErrorIs(t, err, ErrBadURL)
}

func pages(withBundle bool) fstest.MapFS {
	fs := fstest.MapFS{
		"layout.html":       {Data: []byte("<p>{{.Page}}</p>{{.Body}}")},
		"pages/index.html":  {Data: []byte("index page")},
		"pages/watch.html":  {Data: []byte("watch page")},
		"pages/play.html":   {Data: []byte("play page")},
		"pages/replay.html": {Data: []byte("replay page")},
		"unbuilt.html":      {Data: []byte("run make web")},
		"app.css":           {Data: []byte("body{}")},
	}
	if withBundle {
		fs["build/app.js"] = &fstest.MapFile{Data: []byte("console.log(1)")}
		fs["build/sims/skirmish.wasm"] = &fstest.MapFile{Data: []byte("\x00asm\x01\x00\x00\x00")}
	}
	return fs
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestHandlerServesEveryPageAndItsAssets(t *testing.T) {
	h := handler(pages(true))
	for path, want := range map[string]string{"/": "<p>index</p>index page", "/watch": "<p>watch</p>watch page", "/play": "<p>play</p>play page", "/replay": "<p>replay</p>replay page", "/app.css": "body{}", "/build/app.js": "console.log(1)"} {
		rec := get(t, h, path)
		require.Equal(t, http.StatusOK, rec.Code, path)
		assert.Equal(t, want, rec.Body.String(), path)
	}
	rec := get(t, h, "/build/sims/skirmish.wasm")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/wasm", rec.Header().Get("Content-Type"), "compileStreaming needs the wasm type")
	assert.Equal(t, "no-referrer", get(t, h, "/watch").Header().Get("Referrer-Policy"))
}

func TestWithoutTheBundleEveryPageSaysHowToBuildIt(t *testing.T) {
	h := handler(pages(false))
	for _, path := range []string{"/", "/watch", "/play", "/replay"} {
		rec := get(t, h, path)
		require.Equal(t, http.StatusOK, rec.Code, path)
		assert.Contains(t, rec.Body.String(), "make web", path)
	}
}

func TestHandlerListsNoDirectoryAndServesNothingElse(t *testing.T) {
	h := handler(pages(true))
	assert.Equal(t, http.StatusNotFound, get(t, h, "/build/").Code)
	assert.Equal(t, http.StatusNotFound, get(t, h, "/build/sims/").Code)
	assert.Equal(t, http.StatusNotFound, get(t, h, "/unbuilt.html").Code)
	assert.Equal(t, http.StatusNotFound, get(t, h, "/watch.html/x").Code)
}

func TestTheCommittedPagesRenderAndLoadTheBundleRelativeToThemselves(t *testing.T) {
	for _, p := range []string{"index", "watch", "play", "replay"} {
		b, err := render(files(), p)
		require.NoError(t, err)
		s := string(b)
		assert.Contains(t, s, `src="build/app.js"`, p)
		assert.Contains(t, s, `href="app.css"`, p)
		assert.Contains(t, s, `data-page="`+p+`"`, p)
		assert.Contains(t, s, `<div id="banners"></div>`, p)
	}
}

func TestAPageWithoutItsBodyIsAnErrorNotABlankPage(t *testing.T) {
	fs := pages(true)
	delete(fs, "pages/play.html")
	rec := get(t, handler(fs), "/play")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "does not render")
}
