//go:build linux

package exporter

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newPacer is the timerfd pacer: a periodic timerfd wakes the loop, a
// one-shot one, re-armed by every guard, wakes the watchdog. Both are read
// through the runtime's poller, so between ticks the runtime has no timer
// of its own due: its poller sleeps until the tick, and sysmon, which
// wakes for every pending timer, sleeps on. The reads and re-arms are raw
// system calls: a Go system call wakes a sleeping sysmon (entersyscall), a
// raw one does not, and none blocks (the fds are non-blocking).
func newPacer(every, budget time.Duration, fire func()) (pacer, error) {
	tick, err := newTimerFD(every, every)
	if err != nil {
		return nil, err
	}
	watch, err := newTimerFD(budget, 0)
	if err != nil {
		_ = tick.f.Close()
		return nil, err
	}
	p := &fdPacer{tick: tick, watch: watch, every: every, fire: fire, start: time.Now()}
	if err := tick.arm(); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// fdPacer is the pacer on Linux (newPacer).
type fdPacer struct {
	tick, watch *timerFD
	every       time.Duration
	fire        func()
	start       time.Time // the tick timer's arming: tick k is due at start + k*every
	ticks       uint64    // expirations of the tick timer read so far
}

func (p *fdPacer) wait() (time.Time, bool) {
	n, ok := p.tick.await()
	if !ok {
		return time.Time{}, false
	}
	due := p.start.Add(time.Duration(p.ticks+1) * p.every) // the first tick not waited for: late when n > 1
	p.ticks += n
	return due, true
}

// guard re-arms the watchdog; the loop does not disarm it (ease): the next
// tick's guard moves it on before it expires.
func (p *fdPacer) guard() { _ = p.watch.arm() }
func (p *fdPacer) ease()  {}

func (p *fdPacer) stop() {
	_ = p.tick.f.Close() // wakes wait and watchdog; the fd closes after them
	_ = p.watch.f.Close()
}

// watchdog runs fire at every expiry of the watchdog timer until stop.
func (p *fdPacer) watchdog() {
	for {
		if _, ok := p.watch.await(); !ok {
			return
		}
		p.fire()
	}
}

// timerFD is a non-blocking timerfd registered with the runtime's poller.
// Its read and arm functions are bound once, so that neither allocates.
type timerFD struct {
	f      *os.File
	rc     syscall.RawConn
	spec   unix.ItimerSpec // what arm sets
	buf    [8]byte
	n      uint64        // expirations the latest read returned
	err    syscall.Errno // the latest read's (the goroutine awaiting)
	armErr syscall.Errno // the latest arm's (the goroutine arming)
	readFn func(fd uintptr) bool
	armFn  func(fd uintptr)
}

// newTimerFD makes a disarmed timerfd on CLOCK_MONOTONIC that arm sets to
// expire after first, then every period (0: once).
func newTimerFD(first, period time.Duration) (*timerFD, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	t := &timerFD{f: os.NewFile(uintptr(fd), "timerfd"),
		spec: unix.ItimerSpec{Value: unix.NsecToTimespec(int64(first)), Interval: unix.NsecToTimespec(int64(period))}}
	if t.rc, err = t.f.SyscallConn(); err != nil {
		_ = t.f.Close()
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	t.readFn, t.armFn = t.read, t.set
	return t, nil
}

// arm (re)starts the timer: first expiry spec.Value from now.
func (t *timerFD) arm() error {
	t.armErr = 0
	if err := t.rc.Control(t.armFn); err != nil {
		return fmt.Errorf("timerfd: %w", err)
	}
	if t.armErr != 0 {
		return fmt.Errorf("timerfd_settime: %w", t.armErr)
	}
	return nil
}

func (t *timerFD) set(fd uintptr) {
	_, _, t.armErr = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
}

// await blocks until the timer expired and returns the expirations since
// the last await; false once the fd is closed or unreadable.
func (t *timerFD) await() (uint64, bool) {
	t.n, t.err = 0, 0
	if err := t.rc.Read(t.readFn); err != nil || t.err != 0 {
		return 0, false
	}
	return t.n, true
}

// read reads the expiration count; false (wait for the poller) while the
// timer has not expired.
func (t *timerFD) read(fd uintptr) bool {
	_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)))
	switch errno {
	case 0:
		t.n = binary.NativeEndian.Uint64(t.buf[:])
		return true
	case unix.EAGAIN, unix.EINTR:
		return false
	default:
		t.err = errno
		return true
	}
}
