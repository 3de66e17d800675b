package netem

import "errors"

// ErrUnavailable is wrapped by every error that says the packet-level emulator cannot run
// in this process: not root, no network namespaces, no /dev/net/tun, no nf_tables, or
// not Linux. The wrapping error says which, and what to do.
var ErrUnavailable = errors.New("netem: the packet-level emulator is unavailable")

// ErrOptions is wrapped by the error for options out of range.
var ErrOptions = errors.New("netem: bad options")
