package simbuild

import "errors"

// ErrBuild means a module could not be built; the message names the module, the
// command and its output.
var ErrBuild = errors.New("simbuild: cannot build the module")

// ErrToolchain means a module's compiler is not installed (Rust's, C's); the message says
// how to install it.
var ErrToolchain = errors.New("simbuild: the module's toolchain is not installed")
