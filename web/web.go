package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Paths of the pages, defined once: Handler serves them and Links points at them.
const (
	WatchPath  = "/watch"
	PlayPath   = "/play"
	ReplayPath = "/replay"
)

// bundle is the script every page loads; its absence means the app was not built.
const bundle = "build/app.js"

//go:embed all:static
var static embed.FS

// nodeSimRunner is the pages' sim host bundled for Node (web/simrun.mjs says how to run it).
const nodeSimRunner = "build/node/simrun.mjs"

// NodeSimRunner returns the script that runs a sim module in Node through the pages' own
// host code, and false when the binary was built without the app (make web).
func NodeSimRunner() ([]byte, bool) {
	b, err := fs.ReadFile(files(), nodeSimRunner)
	return b, err == nil
}

// Built reports whether the binary holds the built bundle (make web ran before go build).
func Built() bool { return built(files()) }

func built(root fs.FS) bool {
	_, err := fs.Stat(root, bundle)
	return err == nil
}

func files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	return sub
}

// Handler serves the app: / (an index), the pages at WatchPath, PlayPath and ReplayPath
// (each its body from static/pages in the layout they share), their assets, and an empty
// list of sim modules at ModulesPath (a relay serves its own there). Without the bundle
// every page is replaced by one that says how to build it.
func Handler() http.Handler { return handler(files()) }

func handler(root fs.FS) http.Handler {
	built := built(root)
	assets := http.FileServerFS(root)
	page := func(name string) http.HandlerFunc {
		var body []byte
		var err error
		if built {
			body, err = render(root, name)
		} else {
			body, err = fs.ReadFile(root, "unbuilt.html")
		}
		return func(w http.ResponseWriter, r *http.Request) {
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("Referrer-Policy", "no-referrer")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			http.ServeContent(w, r, name+".html", time.Time{}, bytes.NewReader(body))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", page("index"))
	mux.HandleFunc("GET "+WatchPath, page("watch"))
	mux.HandleFunc("GET "+PlayPath, page("play"))
	mux.HandleFunc("GET "+ReplayPath, page("replay"))
	mux.HandleFunc("GET /app.css", serveAsset(assets))
	mux.HandleFunc("GET /build/", serveAsset(assets))
	// The pages alone have no sim directory: an empty list, which a relay's own
	// ModuleHandler takes the place of (a longer pattern on its mux).
	mux.Handle("GET "+ModulesPath, ModuleHandler(nil))
	return mux
}

// render puts a page's body (pages/<name>.html) into the layout every page shares.
func render(root fs.FS, name string) ([]byte, error) {
	layout, err := template.ParseFS(root, "layout.html")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPage, err)
	}
	body, err := fs.ReadFile(root, "pages/"+name+".html")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPage, err)
	}
	var b bytes.Buffer
	// The body is the binary's own embedded file, not input: it is trusted HTML.
	if err := layout.Execute(&b, struct {
		Page string
		Body template.HTML
	}{name, template.HTML(body)}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPage, err)
	}
	return b.Bytes(), nil
}

func serveAsset(assets http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		assets.ServeHTTP(w, r)
	}
}

// Beside is the http(s) URL of what a relay serves beside its WebSocket endpoint wsURL
// (ws://host/v1/ws or wss://…, its path ending in endpoint, the relay's /v1/ws): the
// pages and the match API. A relay behind a proxy under a prefix (wss://host/game/v1/ws)
// serves them under that prefix (https://host/game); the path has no trailing slash.
func Beside(wsURL, endpoint string) (*url.URL, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("%w: scheme %q, want ws or wss", ErrBadURL, u.Scheme)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(strings.TrimSuffix(u.Path, endpoint), "/")}, nil
}

// Links returns the watch link (with the spectator token) and, for a sim the play page
// plays (Playable), one play link per player token, for a relay whose WebSocket endpoint
// is wsURL (ws://host/v1/ws or wss://…, its path ending in endpoint, the relay's
// /v1/ws): the pages live on the same host, over http or https, with the token in the
// fragment.
func Links(wsURL, endpoint, sim, spectatorToken string, playerTokens []string) (watch string, play []string, err error) {
	base, err := Beside(wsURL, endpoint)
	if err != nil {
		return "", nil, err
	}
	link := func(path, token string) string {
		l := url.URL{Scheme: base.Scheme, Host: base.Host, Path: base.Path + path, Fragment: "token=" + token}
		return l.String()
	}
	watch = link(WatchPath, spectatorToken)
	if !Playable(sim) {
		return watch, nil, nil
	}
	for _, t := range playerTokens {
		play = append(play, link(PlayPath, t))
	}
	return watch, play, nil
}
