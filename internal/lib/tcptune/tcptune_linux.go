package tcptune

import (
	"time"

	"golang.org/x/sys/unix"
)

// Socket options newer than golang.org/x/sys's tables (include/uapi/linux/tcp.h).
const (
	tcpRTOMinUs    = 45 // TCP_RTO_MIN_US, Linux 6.15
	tcpDelackMaxUs = 46 // TCP_DELACK_MAX_US, Linux 6.15
)

func applyFD(fd uintptr, o Options) Applied {
	var a Applied
	setUs := func(name string, opt int, d time.Duration) time.Duration {
		if d < 0 {
			return 0
		}
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, opt, int(d.Microseconds())); err != nil {
			a.refuse(name, err)
			return 0
		}
		got, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, opt)
		if err != nil {
			return d
		}
		return time.Duration(got) * time.Microsecond
	}
	a.RTOMin = setUs("TCP_RTO_MIN_US", tcpRTOMinUs, o.rtoMin())
	a.DelackMax = setUs("TCP_DELACK_MAX_US", tcpDelackMaxUs, o.delackMax())
	if !o.NoThinLinear {
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_THIN_LINEAR_TIMEOUTS, 1); err != nil {
			a.refuse("TCP_THIN_LINEAR_TIMEOUTS", err)
		} else {
			a.ThinLinear = true
		}
	}
	return a
}

func probe(o Options) (Applied, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return Applied{}, err
	}
	defer unix.Close(fd)
	return applyFD(uintptr(fd), o), nil
}

func readFD(fd uintptr) Applied {
	var a Applied
	if v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, tcpRTOMinUs); err == nil {
		a.RTOMin = time.Duration(v) * time.Microsecond
	}
	if v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, tcpDelackMaxUs); err == nil {
		a.DelackMax = time.Duration(v) * time.Microsecond
	}
	if v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_THIN_LINEAR_TIMEOUTS); err == nil {
		a.ThinLinear = v != 0
	}
	return a
}
