// Package testnet holds what tests need to run servers and processes on the
// loopback interface: a free address for a server the test starts itself,
// and a goroutine-safe buffer for the output of processes it runs.
package testnet

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address, 127.0.0.1:PORT, whose port was free
// when asked: for a server the test starts on its own (a process, or code
// that takes an address, not a listener). Another process may take the port
// in between; a test that can pass a net.Listener should listen on
// 127.0.0.1:0 itself.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// SyncBuffer is a bytes.Buffer that several goroutines may write (a
// process's stdout and stderr) while the test reads it. The zero value is
// ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
