package crossarch

import "fmt"

// BuildError is a failed go build, with the compiler's output.
type BuildError struct {
	Pkg, Target, Output string
	Err                 error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("crossarch: go build %s for %s: %v\n%s", e.Pkg, e.Target, e.Err, e.Output)
}

func (e *BuildError) Unwrap() error { return e.Err }
