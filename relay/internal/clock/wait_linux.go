package clock

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tickrelay/tickrelay/relay/internal/rawio"
)

// phaseWaiter waits for a phase's instants on a timerfd, read through Go's poller. Go's
// own timers wake an idle process through epoll's millisecond timeout, so they fire up to
// a millisecond late, by a different amount each tick: that was most of the relay's frame
// jitter at light load. A timerfd's expiry is an event, on time to the kernel's timer
// slack (50 µs). Its calls are raw for the reason socket calls are (package rawio); none
// of them can block (the timerfd is non-blocking).
type phaseWaiter struct {
	f  *os.File
	sc syscall.RawConn // nil: the timerfd could not be made; Go's timers instead
	goTimer

	// The RawConn's callbacks, made once (a closure per call would allocate), and their
	// argument and results.
	spec  unix.ItimerSpec
	armed syscall.Errno
	n     [8]byte // the number of expiries
	arm   func(uintptr)
	read  func(uintptr) bool
}

func newPhaseWaiter() *phaseWaiter {
	w := &phaseWaiter{}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return w
	}
	w.f = os.NewFile(uintptr(fd), "tickrelay-phase-timer")
	if w.sc, err = w.f.SyscallConn(); err != nil {
		w.f.Close()
		w.f, w.sc = nil, nil
	}
	w.arm = func(fd uintptr) {
		_, _, w.armed = syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&w.spec)), 0, 0, 0)
	}
	w.read = func(fd uintptr) bool {
		_, e := rawio.Read(fd, w.n[:])
		return e != syscall.EAGAIN // wait for the expiry
	}
	return w
}

// nap sleeps about d on the timerfd, or on a Go timer if the timerfd fails; false if
// stop closed.
func (w *phaseWaiter) nap(d time.Duration, stop <-chan struct{}) bool {
	return (w.sc != nil && w.timerfdSleep(d)) || w.sleep(d, stop)
}

// timerfdSleep arms the timerfd d from now and waits for it to expire; false if it could
// not (the caller then waits on a Go timer).
func (w *phaseWaiter) timerfdSleep(d time.Duration) bool {
	w.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := w.sc.Control(w.arm); err != nil || w.armed != 0 {
		return false
	}
	return w.sc.Read(w.read) == nil
}

// interrupt ends a wait in progress at once (close follows).
func (w *phaseWaiter) interrupt() {
	if w.f != nil {
		_ = w.f.SetReadDeadline(time.Unix(1, 0))
	}
}

func (w *phaseWaiter) close() {
	if w.f != nil {
		w.f.Close()
	}
	w.stop()
}
