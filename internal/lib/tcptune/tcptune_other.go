//go:build !linux

package tcptune

import "runtime"

func applyFD(_ uintptr, o Options) Applied {
	var a Applied
	if o.rtoMin() > 0 || o.delackMax() > 0 || !o.NoThinLinear {
		a.Refused = []string{"every option: these are Linux's (this is " + runtime.GOOS + ")"}
	}
	return a
}

func probe(o Options) (Applied, error) { return applyFD(0, o), nil }

func readFD(uintptr) Applied { return Applied{} }
