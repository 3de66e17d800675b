//go:build !linux

package loadtest

import "net"

// stamped returns c as it is: receive stamps are read on Linux only.
func stamped(c net.Conn) (net.Conn, *rxStamp) { return c, &rxStamp{} }
