// Package sim defines the deterministic simulation contract of tickrelay and the kit to
// write one: a registry of simulations by name and version, the FNV-1a 64 Digest that
// state hashes use, fixed-point math (package sim/kit/fixed) and a seeded PRNG (package
// sim/kit/rng). Package sim/games/skirmish is the demo game, sim/games/hashchain the
// smallest reference sim, sim/runtime/wasm runs sims compiled to WebAssembly, and
// sim/check holds the author's checks (simtest, simvet).
//
// Use Register in an init function to make a simulation available by name and version
// (Provide at run time, for a module loaded from a directory), and New to build one from
// a Config. Use CheckName for the one rule every sim name follows, Digest to hash state.
//
// # Rules inside a tick
//
// Every peer must compute bit-identical state from the same commands, on amd64, arm64 and
// wasm alike. Inside Step a simulation therefore uses fixed-point integers (never floats),
// only its own seeded PRNG, no map iteration, no time, no goroutines and no global state,
// and entity ids that only increase. Malformed payloads are ignored the same way on every
// peer, never a panic.
//
// # Optional interfaces
//
// A Sim may also implement Snapshotter (save and restore state, for rejoin and seek),
// Dumper (a readable state dump, for desync evidence), SubHasher (named subsystem hashes),
// Ender (report that the match is over) and Failer (report that it broke, as a
// WebAssembly module that trapped does).
package sim
