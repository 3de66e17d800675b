package simbuild

import "errors"

// ErrBuild means a module could not be built; the message names the module, the
// command and its output.
var ErrBuild = errors.New("simbuild: cannot build the module")
