package sim

import "fmt"

// MaxNameLen is the longest simulation name: 64 bytes.
const MaxNameLen = 64

// NameRule says in words which simulation names are allowed; CheckName enforces it.
const NameRule = "1 to 64 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit"

// CheckName returns an error wrapping ErrBadName unless name is a valid simulation name:
// 1 to MaxNameLen ASCII letters, digits, '.', '_' or '-', the first a letter or digit.
// Names are short and printable so that they are safe in file names, logs and URLs; every
// place that takes a sim name from outside (the match API, a module's own name) checks it
// here.
func CheckName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLen {
		return fmt.Errorf("%w %q: it has %d bytes; use %s", ErrBadName, name, len(name), NameRule)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%w %q: byte %d (%q) is not allowed; use %s", ErrBadName, name, i, c, NameRule)
		}
	}
	return nil
}
