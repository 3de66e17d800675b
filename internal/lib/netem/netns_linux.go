package netem

import (
	"context"
	"fmt"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// Namespace is a network namespace this process made, held open by a file descriptor:
// it lives until Close and until the last socket and device in it are gone.
type Namespace struct {
	fd   int
	name string // for messages: "server", "client" or "link"
}

// threadNS is the calling thread's own network namespace.
const threadNS = "/proc/thread-self/ns/net"

// onThread runs f on a goroutine locked to a fresh OS thread's turn in the namespace
// enter(fd) puts it in, and puts the thread back into the namespace it started in. A
// thread that cannot go back is never unlocked: its goroutine ends locked, and the Go
// runtime then ends the thread rather than run other goroutines in the wrong namespace.
func onThread(enter func() error, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open(threadNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netem: open %s: %w", threadNS, err)
			return
		}
		defer unix.Close(orig)
		if err := enter(); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = f()
		if rerr := unix.Setns(orig, unix.CLONE_NEWNET); rerr != nil {
			errc <- fmt.Errorf("netem: leaving a namespace: %w", rerr) // the thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// newNamespace makes an empty network namespace (its loopback down).
func newNamespace(name string) (*Namespace, error) {
	ns := &Namespace{fd: -1, name: name}
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("%w: unshare(CLONE_NEWNET): %w (run as root, or with CAP_SYS_ADMIN)", ErrUnavailable, err)
		}
		return nil
	}, func() error {
		fd, err := unix.Open(threadNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("netem: open the new namespace: %w", err)
		}
		ns.fd = fd
		return nil
	})
	if err != nil {
		if ns.fd >= 0 {
			unix.Close(ns.fd)
		}
		return nil, err
	}
	return ns, nil
}

// Do runs f with the calling code's sockets, devices and children created in the
// namespace: on an OS thread of its own that enters the namespace for the call.
func (ns *Namespace) Do(f func() error) error {
	return onThread(func() error {
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("netem: entering the %s namespace: %w", ns.name, err)
		}
		return nil
	}, f)
}

// Listen listens in the namespace (net.Listen's arguments).
func (ns *Namespace) Listen(network, addr string) (ln net.Listener, err error) {
	err = ns.Do(func() error {
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// ListenPacket opens a packet socket in the namespace (net.ListenPacket's arguments): a
// UDP socket for QUIC, on either side.
func (ns *Namespace) ListenPacket(network, addr string) (pc net.PacketConn, err error) {
	err = ns.Do(func() error {
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

// DialContext dials from the namespace with d (nil: a zero net.Dialer, whose Control
// still runs on each socket): a function for http.Transport.DialContext.
func (ns *Namespace) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	return func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = ns.Do(func() error {
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// String names the namespace.
func (ns *Namespace) String() string { return ns.name }

// Close lets the namespace go once nothing in it is left.
func (ns *Namespace) Close() error {
	if ns.fd < 0 {
		return nil
	}
	err := unix.Close(ns.fd)
	ns.fd = -1
	return err
}
