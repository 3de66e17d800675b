package loadtest

import (
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampConn reads a TCP connection with recvmsg, asking the kernel for the receive time
// of the last segment each read consumes (SO_TIMESTAMPNS: a software stamp, by the wall
// clock, taken as the segment reached the socket layer). A read allocates nothing, so
// stamping costs the swarm little more than a plain read. One goroutine reads it at a
// time, as a stream wants. (On 386 and s390x the direct recvmsg call needs Linux 4.3.)
type stampConn struct {
	tcp *net.TCPConn
	rc  syscall.RawConn
	st  *rxStamp
	id  uint64 // this connection's number among st's
	// The read in progress: recvmsg's arguments and results, kept here (recvCall is
	// built once) so that a read allocates nothing.
	msg      unix.Msghdr
	iov      unix.Iovec
	oob      []byte
	n        int
	err      error
	recvCall func(fd uintptr) bool
}

// stamped wraps c so that its reads update st, if the kernel agrees to stamp it;
// otherwise c is returned as it is.
func stamped(c net.Conn, st *rxStamp) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	sc := &stampConn{tcp: tc, rc: rc, st: st, id: st.dials.Add(1), oob: make([]byte, unix.CmsgSpace(16))}
	sc.msg.Iov, sc.msg.Control = &sc.iov, &sc.oob[0]
	sc.msg.SetIovlen(1)
	sc.recvCall = sc.recv
	return sc
}

// recv is one recvmsg into c.iov; false (wait on the poller) if the socket is empty.
// (unix.Recvmsg would allocate a socket address per call.)
func (c *stampConn) recv(fd uintptr) bool {
	c.msg.SetControllen(len(c.oob))
	n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
	c.n, c.err = int(n), nil
	if errno != 0 {
		c.n, c.err = 0, errno
	}
	return errno != unix.EAGAIN
}

func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.iov.Base = &p[0]
	c.iov.SetLen(len(p))
	// Waits on the poller like net.Conn's Read, deadlines included.
	rerr := c.rc.Read(c.recvCall)
	c.iov.Base = nil // keep no hold on p
	if rerr != nil {
		return 0, rerr
	}
	if c.err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.tcp.LocalAddr(), Addr: c.tcp.RemoteAddr(), Err: c.err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	var ns int64 // 0 if the kernel gave no stamp
	if at, ok := parseStamp(c.oob[:c.msg.Controllen]); ok {
		ns = at.UnixNano()
	}
	c.st.at.Store(ns)
	c.st.conn.Store(c.id)
	c.st.reads.Add(1)
	return c.n, nil
}

// The rest of net.Conn is the TCP connection's. (No embedding: it would promote
// *net.TCPConn's WriteTo, through which io.Copy would read around Read.)
func (c *stampConn) Write(p []byte) (int, error)        { return c.tcp.Write(p) }
func (c *stampConn) Close() error                       { return c.tcp.Close() }
func (c *stampConn) LocalAddr() net.Addr                { return c.tcp.LocalAddr() }
func (c *stampConn) RemoteAddr() net.Addr               { return c.tcp.RemoteAddr() }
func (c *stampConn) SetDeadline(t time.Time) error      { return c.tcp.SetDeadline(t) }
func (c *stampConn) SetReadDeadline(t time.Time) error  { return c.tcp.SetReadDeadline(t) }
func (c *stampConn) SetWriteDeadline(t time.Time) error { return c.tcp.SetWriteDeadline(t) }

// parseStamp finds the SCM_TIMESTAMPNS message among control messages.
func parseStamp(oob []byte) (time.Time, bool) {
	for len(oob) > 0 {
		h, d, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return time.Time{}, false
		}
		oob = rest
		if h.Level != unix.SOL_SOCKET || h.Type != unix.SCM_TIMESTAMPNS {
			continue
		}
		// A struct timespec: two longs.
		switch len(d) {
		case 16:
			return time.Unix(int64(binary.NativeEndian.Uint64(d)), int64(binary.NativeEndian.Uint64(d[8:]))), true
		case 8:
			return time.Unix(int64(int32(binary.NativeEndian.Uint32(d))), int64(int32(binary.NativeEndian.Uint32(d[4:])))), true
		}
	}
	return time.Time{}, false
}
