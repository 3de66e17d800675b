// Command module is testsim's Tally as a WebAssembly module of the sim ABI version 1, for
// tests of desync forensics with module sims:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tally.wasm ./internal/testkit/testsim/module
//
// Built for any other platform it does nothing.
package main

import (
	"github.com/tickrelay/tickrelay/internal/testkit/testsim"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/guest"
)

func init() { guest.Serve(testsim.Name, testsim.Version) }

func main() {}
