// Package abi holds the facts of the WebAssembly sim ABI version 1 that both sides share
// — the host (package sim/runtime/wasm) and Go modules (package sim/runtime/wasm/guest): the export
// names, spans (ptr | len<<32), the tick's command layout and the sub-hash layout. It
// has no WebAssembly runtime in it, so a module links it at no cost.
//
// Use PutCommands and AppendCommands for a tick's commands, AppendSubHashes and
// ParseSubHashes for named hashes, Span and CheckSpan for what a module returns.
// docs/wasm-sims.md is the contract in words.
//
// # Robustness
//
// Every decoder returns an error wrapping ErrMalformed, never panics, on any bytes
// (fuzzed by FuzzCommands and FuzzSubHashes), and never allocates more than its input
// can hold.
package abi
