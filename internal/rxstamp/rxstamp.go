// Package rxstamp reads TCP connections with the kernel's receive
// timestamps (SO_TIMESTAMPNS): each read also says when its bytes reached
// the socket, not when the reader got round to them. A client that
// measures time to first token and the gaps between tokens stays accurate
// while it waits for a CPU: the kernel stamped the segment on arrival.
//
// Where the platform or the connection has no such timestamps (not Linux,
// not TCP, the option refused), Wrap returns the connection unchanged and
// Arrival answers the time it is given.
package rxstamp

import (
	"net"
	"sync"
	"time"
)

// Conn is a TCP connection whose reads note the kernel's receive
// timestamp of the newest segment they returned.
type Conn struct {
	net.Conn
	reader

	mu   sync.Mutex
	last time.Time // the newest read segment's arrival, on the monotonic clock; zero: none yet
}

// note keeps the arrival ns (Unix ns, the kernel's clock) of what a read
// returned, converted once to an instant on the monotonic clock so that
// every event parsed from that read gets the same instant.
func (c *Conn) note(ns int64) {
	now := time.Now()
	late := now.Round(0).Sub(time.Unix(0, ns))
	if late < 0 { // a clock step: the read instant is the best left
		late = 0
	}
	c.mu.Lock()
	c.last = now.Add(-late)
	c.mu.Unlock()
}

// Arrival is when the bytes of c's last read reached the socket, as an
// instant with a monotonic reading (durations against time.Now values stay
// monotonic). It is now when c is not a *Conn, when no read carried a
// timestamp, or when that instant is after now.
func Arrival(c net.Conn, now time.Time) time.Time {
	last, ok := Last(c)
	if !ok || last.After(now) {
		return now
	}
	return last
}

// Last is Arrival without a clock to compare with: the arrival of c's last
// read, never after the instant that read returned; false when c is not a
// *Conn or no read carried a timestamp.
func Last(c net.Conn) (time.Time, bool) {
	rc, ok := c.(*Conn)
	if !ok {
		return time.Time{}, false
	}
	rc.mu.Lock()
	last := rc.last
	rc.mu.Unlock()
	return last, !last.IsZero()
}
