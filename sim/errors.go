package sim

import "errors"

var (
	// ErrUnknownSim means no simulation is registered under the name and version asked for.
	ErrUnknownSim = errors.New("sim: unknown simulation")
	// ErrBadConfig means a simulation cannot be built from the config given.
	ErrBadConfig = errors.New("sim: bad config")
	// ErrBadName means a simulation name breaks the rule of CheckName.
	ErrBadName = errors.New("sim: bad simulation name")
)
