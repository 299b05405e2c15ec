package openai

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// rawServer serves canned event streams on 127.0.0.1, perConn requests on
// each connection before it closes it (without saying so: as a server
// whose keep-alive timeout passes does); it counts the connections.
func rawServer(t *testing.T, perConn int) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	body := string(stream(3))
	var conns atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; i < perConn; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/v1", &conns
}

func TestConnReuse(t *testing.T) {
	u, conns := rawServer(t, 1000)
	c, err := New(Config{BaseURL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 5; i++ {
		if resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); resp.Err != nil || resp.Chunks != 3 {
			t.Fatalf("request %d: %v, %d chunks", i, resp.Err, resp.Chunks)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential requests, want 1", n)
	}
}

// TestConnStale: a kept connection the server closed in the meantime is
// replaced by a new one, and the request succeeds.
func TestConnStale(t *testing.T) {
	u, conns := rawServer(t, 1)
	c, err := New(Config{BaseURL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 5; i++ {
		if resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); resp.Err != nil {
			t.Fatalf("request %d: %v", i, resp.Err)
		}
	}
	if n := conns.Load(); n != 5 {
		t.Fatalf("%d connections, want 5", n)
	}
}
