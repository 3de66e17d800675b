// Package hashchain implements the smallest useful deterministic simulation, registered
// in the sim registry as "hashchain" version 1: its whole state is an FNV-1a 64 chain over
// the seed, the player count, every tick and every command, so two peers agree on its hash
// exactly when they applied the same frames, and stepping it costs next to nothing.
//
// Use it where the relay, not the game, is measured (the load tester's default sim), as
// the reference for sim authors (docs/wasm-sims.md writes the same chain as a
// WebAssembly module in another language), and in tests that need a sim whose hash
// depends on every byte of the stream.
//
// # The chain
//
// The initial state is the digest of the seed (8 bytes, little-endian) then the player
// count (4 bytes). Step mixes, in a fresh digest: the previous state (8 bytes), the tick
// (8 bytes), then for each command in order its player (4), seq (4), payload length (4)
// and payload bytes. Snapshot is the state and the next tick, 8 bytes each; params are
// ignored.
package hashchain
