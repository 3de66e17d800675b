package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ModulesPath is where a relay serves the sim modules of its own sim directory to the
// pages (ModuleHandler), beside the ones the app ships under /build/sims/: the pages
// load both lists, the relay's taking the place of a shipped module of the same sim.
const ModulesPath = "/v1/sims/"

// ModuleHandler serves modules, by file name (each metered, as the pages run them:
// package sim/runtime/wasm/meter), under ModulesPath: index.json lists the names, and each name
// is its module. Names are the sim directory's own (no path); anything else is 404.
func ModuleHandler(modules map[string][]byte) http.Handler {
	names := make([]string, 0, len(modules))
	for n := range modules {
		names = append(names, n)
	}
	slices.Sort(names)
	index, _ := json.Marshal(names) // strings only: cannot fail
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, ModulesPath)
		body, ctype := index, "application/json"
		if name != "index.json" {
			b, ok := modules[name]
			if !ok || strings.ContainsAny(name, "/\\") {
				http.NotFound(w, r)
				return
			}
			body, ctype = b, "application/wasm"
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Type", ctype)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
	})
}

// Playable reports whether the play page can play a match of sim: it has buttons and a
// map for skirmish only. The match API hands out play links for those matches alone;
// any other sim is watched, and played by the game's own client.
func Playable(sim string) bool { return sim == playableSim }

// playableSim is the one sim the play page's orders are written for.
const playableSim = "skirmish"
