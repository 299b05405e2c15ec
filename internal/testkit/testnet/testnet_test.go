package testnet

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
)

func TestFreeAddr(t *testing.T) {
	addr := FreeAddr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("FreeAddr() = %q, want 127.0.0.1:PORT", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on the free address: %v", err)
	}
	l.Close()
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 50 {
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	out := b.String()
	for i := range 4 {
		if n := strings.Count(out, fmt.Sprintf("%d\n", i)); n != 50 {
			t.Errorf("writer %d: %d lines, want 50", i, n)
		}
	}
}
