// Command module is the hash chain sim as a WebAssembly module of the sim ABI version 1
// (docs/wasm-sims.md), built from the Go source of the built-in sim:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o out/sims/hashchain-go.wasm ./sim/games/hashchain/module
//
// It is the Go reference the AssemblyScript module (sim/games/hashchain/as) is checked
// against through the same host. Built for any other platform it does nothing.
package main

import (
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/guest"
)

func init() { guest.Serve(hashchain.Name, hashchain.Version) }

func main() {}
