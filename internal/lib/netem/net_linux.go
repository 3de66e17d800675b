package netem

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
)

// The link's addresses: the server's and the client's end of the TUN pair, in the
// benchmarking range (RFC 2544), which no namespace of ours routes anywhere else.
var (
	serverIP = netip.AddrFrom4([4]byte{198, 18, 0, 1})
	clientIP = netip.AddrFrom4([4]byte{198, 18, 0, 2})
)

const tunName = "tr0"

// Net is an emulated network: a server's namespace and a client's, and the link
// between them. Without delay or jitter both are one namespace whose loopback is the
// link.
type Net struct {
	// Server is where the server listens, on ServerIP; Client is where clients dial from.
	Server, Client *Namespace
	// ServerIP is the address the server listens on and clients dial.
	ServerIP netip.Addr
	opts     Options
	tuns     []*os.File
	dirs     []*direction   // the forwarder in this process, or
	fwd      *forwarderProc // the forwarder in a process of its own
	// Forwarder says where the forwarder runs and at which priority.
	Forwarder string
}

// Open makes the namespaces, the loss rules and (with a delay or jitter) the forwarder.
// An error wrapping ErrUnavailable says why this process cannot.
func Open(o Options) (*Net, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	n := &Net{opts: o}
	if err := n.open(o); err != nil {
		n.Close() // whatever was made so far
		return nil, err
	}
	return n, nil
}

func (n *Net) open(o Options) (err error) {
	if !o.forwarded() {
		ns, err := newNamespace("link")
		if err != nil {
			return err
		}
		n.Server, n.Client, n.ServerIP = ns, ns, netip.AddrFrom4([4]byte{127, 0, 0, 1})
		if err := ns.Do(func() error { return ifConfig("lo", netip.Addr{}, netip.Addr{}, 0) }); err != nil {
			return err
		}
		return installLoss(ns, "lo", o.Loss, o.Burst)
	}
	if n.Server, err = newNamespace("server"); err != nil {
		return err
	}
	if n.Client, err = newNamespace("client"); err != nil {
		return err
	}
	n.ServerIP = serverIP
	ends := []struct {
		ns         *Namespace
		addr, peer netip.Addr
	}{{n.Server, serverIP, clientIP}, {n.Client, clientIP, serverIP}}
	for _, e := range ends {
		var tun *os.File
		err := e.ns.Do(func() error {
			if err := ifConfig("lo", netip.Addr{}, netip.Addr{}, 0); err != nil {
				return err
			}
			var err error
			if tun, err = openTUN(tunName); err != nil {
				return err
			}
			return ifConfig(tunName, e.addr, e.peer, linkMTU)
		})
		if tun != nil {
			n.tuns = append(n.tuns, tun)
		}
		if err != nil {
			return err
		}
		if err := installLoss(e.ns, tunName, o.Loss, o.Burst); err != nil {
			return err
		}
	}
	if p, err := startForwarder(n.tuns[0], n.tuns[1], o); err == nil {
		n.fwd = p
		st, _ := p.stats()
		n.Forwarder = "own process, " + st.Priority
		return nil
	} else {
		n.Forwarder = "this process (" + err.Error() + ")"
	}
	n.dirs = startDirections(n.tuns[0], n.tuns[1], o)
	return nil
}

// Options returns what the network applies.
func (n *Net) Options() Options { return n.opts }

// Forwarded returns the packets the forwarder moved, those it dropped because a
// direction's queue was full, and how late it sent them, both directions together
// (zero without a forwarder).
func (n *Net) Forwarded() (moved, overflow int64, lag Lag) {
	if n.fwd != nil {
		st, err := n.fwd.stats()
		if err != nil {
			return 0, 0, Lag{}
		}
		return st.Moved, st.Overflow, st.Lag
	}
	return sumDirections(n.dirs)
}

// Close stops the forwarder and lets the namespaces go (each once its last socket has).
func (n *Net) Close() error {
	var errs []error
	if n.fwd != nil {
		errs = append(errs, n.fwd.stop())
		n.fwd = nil
	}
	for _, t := range n.tuns {
		errs = append(errs, t.Close()) // ends the readers
	}
	for _, d := range n.dirs {
		d.stop()
	}
	n.tuns, n.dirs = nil, nil
	if n.Server != nil {
		errs = append(errs, n.Server.Close())
	}
	if n.Client != nil && n.Client != n.Server {
		errs = append(errs, n.Client.Close())
	}
	return errors.Join(errs...)
}

// Check reports whether Open can work in this process: nil, or an error wrapping
// ErrUnavailable that says what is missing. It makes and drops a namespace with a TUN
// device and a loss rule.
func Check() error {
	n, err := Open(Options{Loss: 0.5, Delay: 1})
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	return n.Close()
}
