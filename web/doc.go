// Package web holds tickrelay's browser app — the watch, play and replay pages — and
// serves it from the binary (go:embed) on the relay's own listen address: no CDN, no
// separate server.
//
// Use Handler to serve the pages and their assets, ModuleHandler to serve a relay's own
// sim modules to them, and Links to build the watch and play links the match API hands
// out (play links only for a sim the play page plays: Playable). The pages are static/layout.html around a body
// from static/pages, rendered once; their script is web/src (TypeScript over the
// client in client/ts), which runs the match's sim module in the browser with the
// client's module host (client/ts/src/wasmsim.ts) and its small deterministic WASI
// (client/ts/src/wasi.ts, the same fixed answers as the Go host's: docs/wasm-sims.md).
//
// # The bundle is a build output
//
// The pages' script (static/build/app.js) and the sim modules the browser runs
// (static/build/sims/*.wasm) are built by `make web` (esbuild from npm, pinned in
// package-lock.json; the modules from `make sims`) and never committed. Without them the
// binary still builds, from the committed placeholder, and every page says how to build
// the app instead of showing a broken page.
//
// # Tokens stay out of logs
//
// A link carries its join token in the URL fragment (/watch#token=…), which browsers
// never send to a server: it reaches neither the relay's logs nor a proxy's.
package web
