// Package rng implements PCG32 (PCG-XSH-RR: 64-bit state, 32-bit output, selectable
// stream), the seeded pseudo-random generator of tickrelay simulations, exactly as the
// reference pcg-c-basic library by Melissa O'Neill defines it, so the same seed gives the
// same numbers on every platform and in every language that implements PCG32.
//
// Use New or NewStream to seed a Rand, Uint32, Uint64, Uint32n, Uint64n and Intn to
// draw, Hash to mix its state into a sim.Digest, and State and SetState to save and
// restore it in a snapshot. A Rand is a plain value: copying it forks the sequence.
//
// # Determinism
//
// A Rand holds no pointers and reads nothing but its own 128 bits of state: no time, no
// global source, no goroutines. Every draw consumes a documented number of 32-bit
// outputs, so two peers that make the same calls stay in step.
//
// # Bounded draws
//
// Uint32n is pcg32_boundedrand_r of the reference: it rejects outputs below 2^32 mod n
// and returns the rest modulo n, so it is unbiased and reproduces the reference demo's
// coin tosses and dice rolls. Uint64n uses Uint32n when n fits in 32 bits and otherwise
// Lemire's multiply-and-reject method on 64-bit draws. Both may consume more than one
// output (rarely), always the same number for the same state and bound.
//
// # Not for secrets
//
// PCG32 is predictable from a few outputs: never use it for tokens or keys.
package rng
