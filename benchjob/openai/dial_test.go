package openai

import (
	"context"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// TestConnectTimeout makes the dial itself slow (the dialer's Control hook
// sleeps past the connect timeout), as an unreachable host does.
func TestConnectTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := New(Config{BaseURL: "http://" + l.Addr().String() + "/v1", ConnectTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	slow := &net.Dialer{Timeout: 50 * time.Millisecond, Control: func(string, string, syscall.RawConn) error {
		time.Sleep(200 * time.Millisecond)
		return nil
	}}
	c.http.Transport.(*http.Transport).DialContext = slow.DialContext
	c.conns.dial = slow.DialContext
	resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p"})
	if ClassOf(resp.Err) != contract.ClassTimeoutConnect {
		t.Fatalf("err %v, want timeout_connect", resp.Err)
	}
	c.conns = nil // through net/http
	resp = c.Stream(context.Background(), &Request{Model: "m", Prompt: "p"})
	if ClassOf(resp.Err) != contract.ClassTimeoutConnect {
		t.Fatalf("through net/http: err %v, want timeout_connect", resp.Err)
	}
}
