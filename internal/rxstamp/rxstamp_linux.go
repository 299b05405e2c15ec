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

	wmu  sync.Mutex // one write(2) sequence at a time: w's, or pend's
	w    sendState  // Write's
	send func(fd uintptr) bool

	// pend is what the next Read writes first (Pend); tried says that Read
	// got to write it.
	pend      sendState
	tried     bool
	recvAfter func(fd uintptr) bool
}

// sendState is a write under way: what is left of it, how much went,
// and the error that stopped it.
type sendState struct {
	buf []byte
	n   int
	err error
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

// write is Write's raw write: false asks the poller to wait until the
// socket takes more.
func (r *reader) write(fd uintptr) bool {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.w.write(fd)
}

// recvAfterSend is the raw read of a Read with a pending write: its first
// call writes the pending bytes and, when all went, asks the poller to
// wait for the answer (false) instead of reading a socket that has
// nothing yet; the poller's readiness was reset before this call, so the
// answer's arrival, after the write, is not missed. When the bytes did
// not all go (the socket full, or an error) it returns true: Read then
// finishes the write. Later calls read.
func (r *reader) recvAfterSend(fd uintptr) bool {
	if !r.tried {
		r.tried = true
		r.wmu.Lock()
		done := r.pend.write(fd)
		r.wmu.Unlock()
		return !done || r.pend.err != nil || len(r.pend.buf) > 0
	}
	return r.recvmsg(fd)
}

// write writes s.buf to fd: false when the socket takes no more now
// (EAGAIN). It stops at the first error but EINTR, in s.err.
func (s *sendState) write(fd uintptr) bool {
	for len(s.buf) > 0 {
		n, _, errno := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&s.buf[0])), uintptr(min(len(s.buf), maxWrite)))
		switch errno {
		case 0:
			s.buf, s.n = s.buf[n:], s.n+int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			s.err = errno
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
	c.reader.recvAfter = c.reader.recvAfterSend
	return c
}

// Write writes p whole, as the TCP connection does (the write deadline
// included: the raw write waits in the runtime's poller), through the
// raw write(2) above.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	c.w = sendState{buf: p}
	c.wmu.Unlock()
	err := c.raw.Write(c.send)
	c.wmu.Lock()
	w := c.w
	c.w = sendState{}
	c.wmu.Unlock()
	return w.n, c.writeError(err, w.err)
}

// writeError is a write's error as the TCP connection gives it: err from
// the poller (a deadline, a closed connection) or errno from write(2).
func (c *Conn) writeError(err, errno error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Op == "raw-write" {
		err = oe.Err
	}
	if err == nil && errno != nil {
		err = os.NewSyscallError("write", errno)
	}
	if err != nil {
		return &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return nil
}

// Pend has the next Read (of a buffer not empty) write p before it reads (p must stay as it is
// until then): a request and the wait for its answer in one go, without
// the read that would find nothing yet, a system call per request where
// the answer takes longer than the write. That Read returns the write's
// error, if any, as Write would; the bytes the socket did not take at
// once it writes as Write does.
func (c *Conn) Pend(p []byte) { c.pend = sendState{buf: p} }

// sendPending is Read's write of the pending bytes with the wait for the
// answer (recvAfterSend); err is the poller's. It reports whether the
// answer is ready to read (the read's result in c.n and c.err), or the
// write's error.
func (c *Conn) sendPending(err error) (bool, error) {
	pend, tried := c.pend, c.tried
	c.pend, c.tried = sendState{}, false
	switch {
	case !tried: // the poller refused before the write (deadline, closed)
		return false, c.writeError(err, nil)
	case pend.err != nil:
		return false, c.writeError(nil, pend.err)
	case len(pend.buf) > 0:
		_, err := c.Write(pend.buf)
		return false, err
	}
	return true, nil
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
	recv, sending := c.recv, c.pend.buf != nil
	if sending {
		recv = c.recvAfter
	}
	err := c.raw.Read(recv)
	c.iov.Base, c.msg.Iov = nil, nil
	if sending {
		ready, werr := c.sendPending(err)
		if werr != nil {
			return 0, werr
		}
		if !ready {
			return c.Read(p)
		}
	}
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
