// Command tickrelay is the one binary of tickrelay: the relay server, bots, spectators,
// replay tools, load tests and a demo. Run `tickrelay help` for the commands.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	runAsVetTool(os.Args[1:])
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	var ex exitError
	if errors.As(err, &ex) {
		if ex.err != nil {
			fmt.Fprintln(os.Stderr, "tickrelay:", ex.err)
		}
		os.Exit(ex.code)
	}
	fmt.Fprintln(os.Stderr, "tickrelay:", err)
	os.Exit(2)
}

// exitError carries a specific exit code out of a command (e.g. replay verify's 1 for a
// divergence) while cobra handles the rest.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
