package main

// The simulations built into the binary: every command finds them by name.
import (
	_ "github.com/tickrelay/tickrelay/sim/hashchain"
	_ "github.com/tickrelay/tickrelay/sim/skirmish"
)
