package netem

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// linkMTU is the emulated link's MTU: Ethernet's, so a TCP segment is what it is on a
// real path (loopback's 64 KiB would let one lost packet carry many frames).
const linkMTU = 1500

// ifConfig sets an interface of the calling thread's namespace up, with addr (and, for
// a point-to-point device, its peer, which the kernel then routes to) when valid.
func ifConfig(name string, addr, peer netip.Addr, mtu int) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netem: %s: socket: %w", name, err)
	}
	defer unix.Close(s)
	ioctl := func(what string, req uint, set func(*unix.Ifreq)) (*unix.Ifreq, error) {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return nil, err
		}
		if set != nil {
			set(ifr)
		}
		if err := unix.IoctlIfreq(s, req, ifr); err != nil {
			return nil, fmt.Errorf("netem: %s: %s: %w", name, what, err)
		}
		return ifr, nil
	}
	inet4 := func(a netip.Addr) func(*unix.Ifreq) {
		return func(ifr *unix.Ifreq) { _ = ifr.SetInet4Addr(a.AsSlice()) }
	}
	if addr.IsValid() {
		if _, err := ioctl("address", unix.SIOCSIFADDR, inet4(addr)); err != nil {
			return err
		}
		if _, err := ioctl("netmask", unix.SIOCSIFNETMASK, inet4(netip.AddrFrom4([4]byte{255, 255, 255, 255}))); err != nil {
			return err
		}
	}
	if peer.IsValid() {
		if _, err := ioctl("peer address", unix.SIOCSIFDSTADDR, inet4(peer)); err != nil {
			return err
		}
	}
	if mtu > 0 {
		if _, err := ioctl("mtu", unix.SIOCSIFMTU, func(ifr *unix.Ifreq) { ifr.SetUint32(uint32(mtu)) }); err != nil {
			return err
		}
	}
	ifr, err := ioctl("flags", unix.SIOCGIFFLAGS, nil)
	if err != nil {
		return err
	}
	flags := ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING
	_, err = ioctl("up", unix.SIOCSIFFLAGS, func(ifr *unix.Ifreq) { ifr.SetUint16(flags) })
	return err
}

// openTUN makes a TUN device in the calling thread's namespace (IP packets, no packet
// information header), non-blocking so that its reads wait on Go's poller and a Close
// ends them. The device goes when the file is closed.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open /dev/net/tun: %w (load the tun module, or give the container the device)", ErrUnavailable, err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: TUNSETIFF %s: %w", ErrUnavailable, name, err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun:"+name), nil
}
