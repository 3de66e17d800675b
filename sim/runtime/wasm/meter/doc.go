// Package meter is the one definition of how a sim module is bounded: it rewrites a
// WebAssembly 2.0 binary so that every call into it counts fuel in the module itself, the
// same budget running out at the same instruction in every runtime, and caps what a
// runtime would otherwise allocate on a module's word (MaxTableElements, MaxLocals).
//
// Use Meter once, when a module is loaded (sim/runtime/wasm does, for every module of a
// --sim-dir; `make sims` does for the modules the pages run): what a unit of fuel is, and
// what is left unchanged, is Meter's doc; why fuel and not a wall clock is
// docs/wasm-sims.md, "Fuel". A module it cannot meter gets an error wrapping ErrModule
// that names the section (and the function) at fault.
package meter
