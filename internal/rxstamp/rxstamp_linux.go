package rxstamp

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reader is the Linux state of a Conn: the raw socket, a buffer for the
// control message that carries the timestamp, and the receive and send
// calls with their arguments and results, made once so that a read or a
// write allocates nothing.
type reader struct {
	raw  syscall.RawConn
	oob  [64]byte
	iov  unix.Iovec
	msg  unix.Msghdr
	n    int
	err  error
	recv func(fd uintptr) bool

	wmu  sync.Mutex // one Write at a time through the fields below
	wbuf []byte     // what a write has left to send
	wn   int        // what it sent
	werr error
	send func(fd uintptr) bool
}

// The socket is non-blocking (the runtime's poller waits for it), so its
// recvmsg and write return at once, with EAGAIN when they would wait: they
// are made as raw system calls, without the runtime's bookkeeping for a
// call that may block (entersyscall, exitsyscall), which also lets the
// runtime's monitor hand the goroutine's P to another thread mid-call, a
// thread wake-up and a sleep more per request under load.

// recvmsg is the raw read into the buffer r.iov points at: false asks the
// poller to wait for data. It calls recvmsg(2) itself: unix.Recvmsg
// allocates a socket address per call.
func (r *reader) recvmsg(fd uintptr) bool {
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), unix.MSG_CMSG_CLOEXEC)
	r.n, r.err = int(n), nil
	if errno != 0 {
		r.n, r.err = 0, errno
	}
	return r.err != unix.EAGAIN
}

// write is the raw write of r.wbuf: false asks the poller to wait until
// the socket takes more. It stops at the first error but EINTR.
func (r *reader) write(fd uintptr) bool {
	for len(r.wbuf) > 0 {
		n, _, errno := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.wbuf[0])), uintptr(min(len(r.wbuf), maxWrite)))
		switch errno {
		case 0:
			r.wbuf, r.wn = r.wbuf[n:], r.wn+int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			r.werr = errno
			return true
		}
	}
	return true
}

// maxWrite is the most one write(2) is given, as the standard library's
// poller does (1 GiB).
const maxWrite = 1 << 30

// Wrap returns nc reading with receive timestamps when nc is a TCP
// connection that accepts SO_TIMESTAMPNS; nc itself otherwise.
func Wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nc
	}
	c := &Conn{Conn: nc, reader: reader{raw: raw}}
	c.reader.recv = c.reader.recvmsg
	c.reader.send = c.reader.write
	return c
}

// Write writes p whole, as the TCP connection does (the write deadline
// included: the raw write waits in the runtime's poller), through the
// raw write(2) above.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	c.wbuf, c.wn, c.werr = p, 0, nil
	err := c.raw.Write(c.send)
	n, werr := c.wn, c.werr
	c.wbuf = nil
	c.wmu.Unlock()
	if err == nil && werr != nil {
		err = os.NewSyscallError("write", werr)
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return n, nil
}

// Read reads like the TCP connection (deadlines included: the raw read
// waits in the runtime's poller) and notes the arrival of what it read.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.iov.Base = &p[0]
	c.iov.SetLen(len(p))
	c.msg.Iov, c.msg.Iovlen = &c.iov, 1
	err := c.raw.Read(c.recv)
	c.iov.Base, c.msg.Iov = nil, nil
	n, oobn := c.n, int(c.msg.Controllen)
	if err == nil && c.err != nil {
		err = os.NewSyscallError("recvmsg", c.err)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	if ns := timestamp(c.oob[:oobn]); ns > 0 {
		c.note(ns)
	}
	return n, nil
}

// timestamp finds SCM_TIMESTAMPNS in the control messages b and returns
// it in Unix ns (0 when absent). It walks the headers in place: no
// allocation per read.
func timestamp(b []byte) int64 {
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(b) {
			return 0
		}
		data := b[unix.CmsgLen(0):l]
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			return ts.Nano()
		}
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next > len(b) {
			return 0
		}
		b = b[next:]
	}
	return 0
}
