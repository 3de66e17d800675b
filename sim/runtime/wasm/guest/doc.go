// Package guest turns a Go simulation into a WebAssembly sim module: built with
// GOOS=wasip1 GOARCH=wasm and -buildmode=c-shared (a WASI reactor), a main package that
// calls Serve from an init function exports every function of the sim ABI version 1
// (docs/wasm-sims.md) with //go:wasmexport, backed by the sim registered in the Go
// registry under that name and version.
//
// Use it as sim/games/skirmish/module does:
//
//	func init() { guest.Serve(skirmish.Name, skirmish.Version) }
//
//	func main() {}
//
// # Notes
//
// The exports exist on wasip1 only; elsewhere Serve just records its arguments, so the
// main package still builds (and does nothing). Every optional export is present: for a
// sim that lacks the matching Go interface (say, no sim.Dumper) the call fails with a
// "not supported" message, which the host treats as "no dump". Snapshots are the
// exception: the host takes a module that exports them for a sim.Snapshotter and seeks
// with them, so a sim served here must implement sim.Snapshotter. A panic in the sim
// ends the module (the Go runtime prints it to stderr, which the host puts in its error).
package guest
