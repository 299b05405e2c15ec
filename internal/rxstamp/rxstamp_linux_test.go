package rxstamp

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a loopback TCP connection: the client end wrapped, the server
// end plain.
func pair(t testing.TB) (client net.Conn, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	client = Wrap(nc)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// warm waits until the kernel stamps the pair's segments: the first
// SO_TIMESTAMPNS socket of a system turns stamping on through deferred
// work, so the first segments may come without a stamp (Arrival then
// answers the read instant).
func warm(t testing.TB, client, server net.Conn) {
	t.Helper()
	rc := client.(*Conn)
	for range 200 {
		if _, err := server.Write([]byte{'w'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		rc.mu.Lock()
		stamped := !rc.last.IsZero()
		rc.mu.Unlock()
		if stamped {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no segment stamped within 200 tries (1 s)")
}

// TestArrivalIsWhenBytesCame: a reader 50 ms late still learns when the
// bytes reached its socket; without the kernel timestamp (Wrap switched
// off) Arrival would be the late reading instant and this test fails.
func TestArrivalIsWhenBytesCame(t *testing.T) {
	client, server := pair(t)
	if _, ok := client.(*Conn); !ok {
		t.Fatalf("Wrap gave %T, want *Conn (SO_TIMESTAMPNS refused?)", client)
	}
	warm(t, client, server)
	for i := range 3 {
		sent := time.Now()
		if _, err := server.Write([]byte("tok")); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		time.Sleep(50 * time.Millisecond)
		buf := make([]byte, 16)
		n, err := client.Read(buf)
		now := time.Now()
		if err != nil || string(buf[:n]) != "tok" {
			t.Fatalf("read %d: %q, %v", i, buf[:n], err)
		}
		got := Arrival(client, now)
		if last, ok := Last(client); !ok || !last.Equal(got) {
			t.Errorf("read %d: Last %v, %v; Arrival %v", i, last, ok, got)
		}
		if got.Before(sent.Add(-time.Millisecond)) || got.After(written.Add(5*time.Millisecond)) {
			t.Errorf("read %d: arrival %v after the write began, want within [0, %v] (the read came %v after it)",
				i, got.Sub(sent), written.Sub(sent)+5*time.Millisecond, now.Sub(sent))
		}
		if d := now.Sub(got); d < 45*time.Millisecond {
			t.Errorf("read %d: arrival only %v before the late read", i, d)
		}
	}
}

// TestReadLikeTCP: deadlines, the peer's close and a zero-length read
// behave as on a *net.TCPConn.
func TestReadLikeTCP(t *testing.T) {
	client, server := pair(t)
	if n, err := client.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
	if err := client.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := client.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a net.Error timeout", err)
	}
	if err := client.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if _, err := client.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
	if Arrival(client, time.Unix(5, 0)) != time.Unix(5, 0) {
		t.Fatal("arrival without any timestamped read must be the given time")
	}
}

// TestArrivalWithoutTimestamps: a connection that is not a *Conn, or an
// arrival after now (a clock step), answers now.
func TestArrivalWithoutTimestamps(t *testing.T) {
	now := time.Now()
	if got := Arrival(&net.TCPConn{}, now); got != now {
		t.Errorf("plain conn: %v, want now", got)
	}
	if _, ok := Last(&net.TCPConn{}); ok {
		t.Error("plain conn: Last reports an arrival")
	}
	c := &Conn{}
	if _, ok := Last(c); ok {
		t.Error("no read yet: Last reports an arrival")
	}
	c.note(now.Add(time.Hour).UnixNano())
	if got := Arrival(c, now); got != now {
		t.Errorf("arrival in the future: %v, want now", got)
	}
	if last, ok := Last(c); !ok || last.After(time.Now()) {
		t.Errorf("arrival in the future: Last %v, %v, want the read's instant", last, ok)
	}
	if _, ok := Wrap(&net.UnixConn{}).(*Conn); ok {
		t.Error("a Unix socket was wrapped")
	}
}

// TestTimestampParse: truncated or foreign control messages give 0, never
// a panic; a well-formed SCM_TIMESTAMPNS gives its time.
func TestTimestampParse(t *testing.T) {
	ts := unix.NsecToTimespec(1_700_000_000_123_456_789)
	good := unix.UnixRights(0) // a foreign message first
	msg := make([]byte, unix.CmsgSpace(16))
	h := (*unix.Cmsghdr)(unsafePointer(msg))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
	h.SetLen(unix.CmsgLen(16))
	copy(msg[unix.CmsgLen(0):], timespecBytes(ts))
	good = append(good, msg...)
	if got := timestamp(good); got != 1_700_000_000_123_456_789 {
		t.Errorf("timestamp %d", got)
	}
	for _, b := range [][]byte{nil, good[:3], good[:unix.SizeofCmsghdr], msg[:len(msg)-1], make([]byte, 64)} {
		if got := timestamp(b); got != 0 {
			t.Errorf("timestamp(%x) = %d, want 0", b, got)
		}
	}
}

// BenchmarkRead is one timestamped read of a 64-byte segment: the cost a
// streamed token adds over a plain read (compare -bench with Wrap off).
func BenchmarkRead(b *testing.B) {
	client, server := pair(b)
	warm(b, client, server)
	msg, buf := make([]byte, 64), make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := server.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(client, buf[:64]); err != nil {
			b.Fatal(err)
		}
		_ = Arrival(client, time.Now())
	}
}

// TestPendWritesBeforeRead: a pending write goes out with the next Read,
// which then returns the answer; one the socket cannot take at once (more
// than its buffers hold) is finished as Write would; a passed deadline
// fails it as a write.
func TestPendWritesBeforeRead(t *testing.T) {
	client, server := pair(t)
	pc := client.(*Conn)
	for _, size := range []int{4, 8 << 20} {
		req := make([]byte, size)
		go func() {
			if _, err := io.ReadFull(server, make([]byte, size)); err == nil {
				server.Write([]byte("pong"))
			}
		}()
		pc.Pend(req)
		got := make([]byte, 4)
		if _, err := io.ReadFull(client, got); err != nil || string(got) != "pong" {
			t.Fatalf("%d bytes pending: read %q, %v; want pong", size, got, err)
		}
	}
	if err := client.SetDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	pc.Pend([]byte("x"))
	_, err := client.Read(make([]byte, 4))
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("pending write past the deadline: %v, want a write timeout", err)
	}
	_, err = client.Write([]byte("x"))
	if !errors.As(err, &oe) || oe.Op != "write" || !errors.Is(err, os.ErrDeadlineExceeded) || oe.Err != os.ErrDeadlineExceeded {
		t.Fatalf("write past the deadline: %v, want net's write timeout", err)
	}
}
