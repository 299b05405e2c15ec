package simengine

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

func TestServeStartsAndStops(t *testing.T) {
	cfg := fastConfig()
	cfg.StartupDelay = 50 * time.Millisecond
	cfg.ShutdownDelay = 20 * time.Millisecond
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, e, nil, slog.New(slog.DiscardHandler)) }()

	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := e.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health %d once ready", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if st := e.State(); st != gpu.EngineStopped {
		t.Errorf("state %s after Serve returned", st)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("server still answering after Serve returned")
	}
}
