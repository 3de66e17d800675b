// Package simbuild builds the repository's WebAssembly sim modules: the skirmish and
// hash chain sims from their Go source (GOOS=wasip1, -buildmode=c-shared, package
// sim/runtime/wasm/guest) and the hash chain in AssemblyScript (sim/games/hashchain/as, with the
// compiler pinned in its package-lock.json). `make sims` and the tests that need a
// module use it, so both build them the same way.
//
// Use All to build every module into a directory, and Module in a test to get one
// module's path, built once per test process into out/sims/ (never committed). A module
// whose toolchain is missing (npm for AssemblyScript) skips the test, or fails it under
// TICKRELAY_CROSS=require (package internal/testkit/crossarch), as CI runs.
package simbuild
