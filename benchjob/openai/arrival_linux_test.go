package openai

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/rxstamp"
)

// lateReader reads r only after a pause, as a client waiting for a CPU
// would.
type lateReader struct {
	r     io.Reader
	pause time.Duration
}

func (l lateReader) Read(p []byte) (int, error) {
	time.Sleep(l.pause)
	return l.r.Read(p)
}

// TestEventInstantsAreArrivals: a reader 40 ms late on every read still
// gets each token's instant from when it reached the socket. The server
// sends three token events 100 ms apart; with parse instants (the
// timestamps off) the first token would be 40 ms late and this fails.
func TestEventInstantsAreArrivals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	events := []string{
		`data: {"model":"m","choices":[{"index":0,"text":" a","finish_reason":null}]}` + "\n\n",
		`data: {"model":"m","choices":[{"index":0,"text":" b","finish_reason":null}]}` + "\n\n",
		`data: {"model":"m","choices":[{"index":0,"text":" c","finish_reason":"length"}]}` + "\n\n" + "data: [DONE]\n\n",
	}
	sent, start := make(chan []time.Time, 1), make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sent <- nil
			return
		}
		defer c.Close()
		<-start
		var at []time.Time
		for _, e := range events {
			at = append(at, time.Now())
			c.Write([]byte(e))
			time.Sleep(100 * time.Millisecond)
		}
		sent <- at
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tcp := rxstamp.Wrap(nc)
	defer tcp.Close()
	stampedSoon(t)
	close(start)
	st := &state{sse: NewSSEReader(lateReader{r: tcp, pause: 40 * time.Millisecond}, 0), hash: sha256.New(), watch: newWatch()}
	resp := &Response{}
	(&Client{}).read(st, &Request{MaxTokens: 3}, resp, tcp)
	at := <-sent
	if resp.Err != nil || len(at) != 3 || len(resp.ITL) != 2 {
		t.Fatalf("err %v, %d sends, %d gaps", resp.Err, len(at), len(resp.ITL))
	}
	if d := resp.FirstToken.Sub(at[0]); d < 0 || d > 15*time.Millisecond {
		t.Errorf("first token %v after the server sent it, want < 15 ms (the reader was 40 ms late)", d)
	}
	for i, g := range resp.ITL {
		if want := at[i+1].Sub(at[i]); g < want-15*time.Millisecond || g > want+15*time.Millisecond {
			t.Errorf("gap %d: %v, the server's %v", i, g, want)
		}
	}
}

// stampedSoon waits (bounded) until the kernel stamps segments: the first
// timestamping socket of a system turns stamping on through deferred work.
// It reads nothing the test sends: it only waits for the switch.
func stampedSoon(t *testing.T) {
	t.Helper()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	go func() {
		if s, err := probe.Accept(); err == nil {
			defer s.Close()
			for range 200 {
				if _, err := s.Write([]byte{'w'}); err != nil {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	pc, err := net.Dial("tcp", probe.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := rxstamp.Wrap(pc)
	defer p.Close()
	for range 200 {
		if _, err := p.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); rxstamp.Arrival(p, now) != now {
			return
		}
	}
	t.Fatal("the kernel stamped no segment within 200 reads")
}

// TestClientConnsAreStamped: the client's own connections read with
// receive timestamps (the wiring TestEventInstantsAreArrivals relies on).
func TestClientConnsAreStamped(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp := c.Stream(context.Background(), &Request{Model: "test-model", Prompt: "hi", MaxTokens: 2}); resp.Err != nil {
		t.Fatal(resp.Err)
	}
	c.conns.mu.Lock()
	defer c.conns.mu.Unlock()
	if len(c.conns.idle) != 1 {
		t.Fatalf("%d idle connections, want 1", len(c.conns.idle))
	}
	if _, ok := c.conns.idle[0].tcp.(*rxstamp.Conn); !ok {
		t.Errorf("the connection reads through %T, want *rxstamp.Conn", c.conns.idle[0].tcp)
	}
}
