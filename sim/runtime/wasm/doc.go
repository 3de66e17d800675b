// Package wasm runs simulations compiled to WebAssembly, with wazero (pure Go, no cgo):
// a module that implements the sim ABI version 1 (docs/wasm-sims.md; shared facts in
// package sim/runtime/wasm/abi) becomes a sim.Factory, so every tool that takes a sim by name can
// take one from a directory of modules.
//
// Use Load (or LoadBytes) to compile and check a module once, and Module.New as the
// sim.Factory that instantiates it per sim. Use RegisterDir to load every *.wasm file of
// a directory into the sim registry (what the tools' `--sim-dir` does). Write a
// module in Go with package sim/runtime/wasm/guest.
//
// # Sandbox and bounds
//
// A module may import only WASI (wasi_snapshot_preview1) functions, served with fixed
// clocks, zero random bytes, no files and no environment (see moduleConfig), so that it
// stays deterministic. Each instance's memory is capped (Options.MemoryLimitPages,
// default 64 MiB), and each call is bounded by fuel the module counts itself: Load
// meters the module first (package sim/runtime/wasm/meter) and every call gets the budget of
// the sim's config (sim.Config.Fuel), so a call that never ends fails at the same
// instruction on every machine. Modules are compiled once per process and content.
//
// # Failures
//
// Nothing a module does panics or hangs the caller. Loading refuses a bad module with an
// error wrapping ErrLoad that names the file and the export or import at fault. At run
// time a trap, an exit, a call that runs out of fuel or a broken ABI rule gives an error
// wrapping ErrFailed naming the file, the export and the tick; the Sim keeps it (it
// implements sim.Failer, which lockstep.Peer checks after every step) and does nothing
// more. The package never logs.
package wasm
