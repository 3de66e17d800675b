// Command module is the skirmish sim as a WebAssembly module of the sim ABI version 1
// (docs/wasm-sims.md), built from the same Go source as the built-in sim:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o out/sims/skirmish.wasm ./sim/games/skirmish/module
//
// `make sims` builds it. Built for any other platform it does nothing.
package main

import (
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/guest"
)

func init() { guest.Serve(skirmish.Name, skirmish.Version) }

func main() {}
