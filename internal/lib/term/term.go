// Package term answers questions about the terminal the binary writes to.
package term

import "os"

// IsTerminal reports whether f is a terminal (a character device), where a status line
// may be redrawn in place.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
