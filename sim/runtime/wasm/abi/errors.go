package abi

import "errors"

// ErrMalformed means bytes or a value crossing the module boundary break the layout
// this package describes.
var ErrMalformed = errors.New("abi: malformed")
