package openai

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/race"
)

// cannedAnswer is nginx's answer of docs/nginx-sse.conf: a sized body of
// four token chunks, usage and [DONE].
func cannedAnswer() []byte {
	body := stream(4)
	return fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n%s", len(body), body)
}

// cannedConn is an in-memory connection that answers every request (one
// write) with the same answer, allocating nothing: what it costs is the
// client's alone.
type cannedConn struct {
	net.Conn // nil: the methods below are all the client calls
	answer   []byte
	rest     []byte
}

func (c *cannedConn) Write(p []byte) (int, error)      { c.rest = c.answer; return len(p), nil }
func (c *cannedConn) SetDeadline(time.Time) error      { return nil }
func (c *cannedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cannedConn) SetWriteDeadline(time.Time) error { return nil }
func (c *cannedConn) Close() error                     { return nil }

func (c *cannedConn) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// cannedClient is a client with the CLI's default timeouts whose one
// connection is a cannedConn.
func cannedClient(tb testing.TB) *Client {
	c, err := New(Config{BaseURL: "http://canned.invalid/v1", ConnectTimeout: 10 * time.Second, IdleTimeout: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	answer := cannedAnswer()
	c.conns.dial = func(context.Context, string, string) (net.Conn, error) {
		return &cannedConn{answer: answer}, nil
	}
	return c
}

// streamCost is the allocations and bytes allocated per streamed request
// of cannedClient (4 tokens), as testing.AllocsPerRun counts them: after
// a warm-up run, on one P, the mean truncated to a whole number, so that a
// stray allocation of the runtime during the runs (a timer, a GC worker)
// does not count as one more per request.
func streamCost(tb testing.TB, runs int) (allocs, bytes float64) {
	c := cannedClient(tb)
	defer c.Close()
	req := &Request{Model: "m", Prompt: "a prompt of about thirty tokens, as the bench's synthetic workload sends", MaxTokens: 4}
	one := func() {
		if resp := c.Stream(context.Background(), req); resp.Err != nil || resp.CompletionTokens != 4 {
			tb.Fatalf("%v, %d tokens", resp.Err, resp.CompletionTokens)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range runs {
		one()
	}
	runtime.ReadMemStats(&m1)
	n := uint64(runs)
	return float64((m1.Mallocs - m0.Mallocs) / n), float64((m1.TotalAlloc - m0.TotalAlloc) / n)
}

// Allocation budget of one streamed 4-token request (client side: request
// body, head, SSE, chunks, usage, timing, hash). Raise it only with a
// reason in docs/bench.md.
const (
	budgetAllocs = 3
	budgetBytes  = 360
)

// TestStreamAllocBudget fails when a streamed request allocates more than
// its budget (counts, not time).
func TestStreamAllocBudget(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets do not hold under -race: sync.Pool drops objects at random there")
	}
	// The least of three measurements: what else the process allocates
	// meanwhile (the runtime, other tests' goroutines) only adds.
	allocs, bytes := streamCost(t, 200)
	for range 2 {
		a, b := streamCost(t, 200)
		allocs, bytes = min(allocs, a), min(bytes, b)
	}
	t.Logf("%.1f allocs, %.0f bytes per streamed request", allocs, bytes)
	if allocs > budgetAllocs || bytes > budgetBytes {
		t.Fatalf("%.1f allocs and %.0f bytes per streamed request, budget %d and %d", allocs, bytes, budgetAllocs, budgetBytes)
	}
}

// cpuTime is the process' user + system CPU time (getrusage): on a
// loaded machine the figure to compare, not wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStreamCanned is one 4-token streamed request over an in-memory
// connection that costs nothing: the client's own CPU and allocations per
// request (run with -benchmem; -cpuprofile shows where it goes).
func BenchmarkStreamCanned(b *testing.B) {
	c := cannedClient(b)
	defer c.Close()
	req := &Request{Model: "m", Prompt: "a prompt of about thirty tokens, as the bench's synthetic workload sends", MaxTokens: 4}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if resp := c.Stream(context.Background(), req); resp.Err != nil {
			b.Fatal(resp.Err)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/req")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/4, "cpu-ns/token")
}
