// Package fixed implements Q47.16 signed fixed-point arithmetic for deterministic
// simulations: every operation is integer-only, so the same inputs give bit-identical
// results on every platform (amd64, arm64, wasm), which floating point does not promise.
//
// Use FromInt, FromRatio or a raw conversion F(n) (n in 1/65536 units) to make a value,
// the methods Add, Sub, Mul, Div, Sqrt, Abs and Neg to compute, Hypot and MulDiv for
// distances and scaled steps, and Int to get back to whole units. Nothing here converts
// to or from float64: String formats the exact decimal value with integer arithmetic.
//
// # Range
//
// An F is an int64 counting 1/65536 units (16 fractional bits), so it holds the values
// Min = -2^47 to Max = 2^47 - 2^-16, with a resolution of 2^-16 (about 0.0000153).
//
// # Rounding
//
// Every operation whose exact result is not a multiple of 2^-16 (Mul, Div, MulDiv,
// FromRatio, Sqrt, Hypot) rounds toward negative infinity (floor): Mul of 1.5 by
// -2^-16 is -2^-15, not -2^-16. Int also floors: F(-1).Int() is -1. Sqrt and Hypot return
// the exact floor of the true root.
//
// # Overflow
//
// Results outside [Min, Max] saturate at Min or Max instead of wrapping: Max.Add(One) is
// Max, Min.Neg() and Min.Abs() are Max. Division by zero is defined as well: a positive
// dividend gives Max, a negative one Min, and 0/0 gives 0. Sqrt of a negative value is 0.
// No function in this package panics.
package fixed
