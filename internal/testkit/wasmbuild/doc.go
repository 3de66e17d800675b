// Package wasmbuild assembles small WebAssembly binaries from Go values, so the host's
// tests can hand-make exactly the module a case needs (a missing export, a trap, a loop
// that never ends) without committing .wasm files or needing an assembler. It encodes
// the binary format of the WebAssembly 1.0 core specification: types, imports,
// functions, one memory, exports, code and data.
package wasmbuild
