//go:build !unix

package main

import "fmt"

// pinSelf needs taskset: not on this platform.
func pinSelf(string) error {
	return fmt.Errorf("--relay-cpus needs taskset, which this platform has not")
}
