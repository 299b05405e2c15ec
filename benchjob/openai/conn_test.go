package openai

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
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

// TestConnTLS: an https target is served over the client's own TLS
// connections (HTTP/1.1 by ALPN), reused between requests.
func TestConnTLS(t *testing.T) {
	body := stream(3)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.conns == nil || c.conns.tls == nil {
		t.Fatal("https target not on the client's own TLS connections")
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c.conns.tls.RootCAs = roots
	for i := 0; i < 3; i++ {
		if resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); resp.Err != nil || resp.Chunks != 3 {
			t.Fatalf("request %d: %v, %d chunks", i, resp.Err, resp.Chunks)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d TLS connections for 3 sequential requests, want 1", n)
	}
	// Without the test CA the certificate is refused: a connect error.
	c2, _ := New(Config{BaseURL: srv.URL + "/v1"})
	defer c2.Close()
	if resp := c2.Stream(context.Background(), &Request{Model: "m", Prompt: "p"}); ClassOf(resp.Err) != contract.ClassConnect {
		t.Fatalf("unknown certificate: err %v, want class connect", resp.Err)
	}
}

// TestConnUserinfo: a target URL with user:password goes through net/http,
// which sends them as basic auth.
func TestConnUserinfo(t *testing.T) {
	body := stream(3)
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		auth.Store(u + ":" + p)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: strings.Replace(srv.URL, "http://", "http://jo:secret@", 1) + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); resp.Err != nil {
		t.Fatal(resp.Err)
	}
	if got, _ := auth.Load().(string); got != "jo:secret" {
		t.Fatalf("basic auth %q, want jo:secret", got)
	}
}
