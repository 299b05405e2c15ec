package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

// TestMaxRequests: /metrics serves MaxRequests requests at once and
// answers 503 to more (node_exporter's --web.max-requests); the limit is
// what Config says, not a constant.
func TestMaxRequests(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 1}, Config{MaxRequests: 2})
	srv := h.exp.Handler()
	// Hold the exporter's state: gathers block in flight.
	h.exp.mu.Lock()
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	get := func() {
		defer wg.Done()
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		codes <- rec.Code
	}
	wg.Add(2)
	go get()
	go get()
	time.Sleep(200 * time.Millisecond) // both are in flight
	wg.Add(1)
	third := make(chan struct{})
	go func() { get(); close(third) }()
	select {
	case <-third:
	case <-time.After(5 * time.Second):
		h.exp.mu.Unlock()
		wg.Wait()
		t.Fatal("a third /metrics request with 2 in flight and a limit of 2 was not refused")
	}
	h.exp.mu.Unlock()
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for c := range codes {
		got[c]++
	}
	if got[http.StatusOK] != 2 || got[http.StatusServiceUnavailable] != 1 {
		t.Errorf("answers %v, want two 200 and one 503", got)
	}
}

// TestRequestBodyDeadline: a client trickling a request body is cut off at
// the read deadline, before any handler could hold the connection.
func TestRequestBodyDeadline(t *testing.T) {
	saved := readTimeout
	readTimeout = 300 * time.Millisecond
	defer func() { readTimeout = saved }()
	h := newHarness(t, gpu.SimConfig{GPUs: 1}, Config{})
	addr := testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.exp.Serve(ctx, addr, "") }()
	defer func() { cancel(); <-done }()
	var conn net.Conn
	var err error
	for range 100 {
		if conn, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/runs/r1/phases/idle HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{", testToken)
	began := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.ReadAll(conn) // the server answers or closes
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a trickled body held the connection %v, want it cut at the %v read deadline", took, readTimeout)
	}
}
