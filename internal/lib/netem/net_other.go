//go:build !linux

package netem

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
)

// Namespace is a network namespace: Linux only.
type Namespace struct{}

// Do fails: no namespaces here.
func (*Namespace) Do(func() error) error { return errUnsupported }

// Listen fails: no namespaces here.
func (*Namespace) Listen(string, string) (net.Listener, error) { return nil, errUnsupported }

// ListenPacket fails: no namespaces here.
func (*Namespace) ListenPacket(string, string) (net.PacketConn, error) { return nil, errUnsupported }

// DialContext fails: no namespaces here.
func (*Namespace) DialContext(*net.Dialer) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) { return nil, errUnsupported }
}

func (*Namespace) String() string { return "none" }

// Close does nothing.
func (*Namespace) Close() error { return nil }

// Net is an emulated network: Linux only.
type Net struct {
	Server, Client *Namespace
	ServerIP       netip.Addr
	Forwarder      string
}

var errUnsupported = fmt.Errorf("%w: network namespaces are Linux's (this is %s)", ErrUnavailable, runtime.GOOS)

// Open fails: no namespaces here.
func Open(o Options) (*Net, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return nil, errUnsupported
}

// Options returns nothing applied.
func (*Net) Options() Options { return Options{} }

// Forwarded returns zeros.
func (*Net) Forwarded() (int64, int64, Lag) { return 0, 0, Lag{} }

// Close does nothing.
func (*Net) Close() error { return nil }

// Check says the emulator is Linux's.
func Check() error { return errUnsupported }

// Counters fails: no namespaces here.
func (*Net) Counters() (TCPCounters, error) { return TCPCounters{}, errUnsupported }
