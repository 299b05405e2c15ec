package openai

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/joulemark/joulemark/internal/rxstamp"
)

// connPool carries the streamed POSTs over HTTP/1.1 connections it owns:
// the request is written with one write and the answer read by the
// goroutine that waits for it, through the standard library's own parser
// (http.ReadResponse: status, headers, chunked or sized body). net/http's
// Transport costs about three times the CPU per short request (a reader
// and a writer goroutine per connection, channels between them, a header
// copy per request: docs/bench.md); /v1/models and the other GETs, and
// every request through a proxy or with user:password in the URL, stay on
// net/http.
type connPool struct {
	host    string      // Host header
	addr    string      // host:port dialed
	tls     *tls.Config // nil: plain TCP
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout time.Duration // connect (and TLS handshake) timeout; 0: none
	idleFor time.Duration // idle connections older than this are closed, not reused

	mu     sync.Mutex
	idle   []*conn // most recently used last
	max    int
	closed bool
}

// conn is one connection with its buffers.
type conn struct {
	nc    net.Conn
	tcp   net.Conn // the TCP connection under nc (under TLS): its reads carry arrival timestamps (rxstamp)
	br    *bufio.Reader
	wb    []byte
	since time.Time // idle since
	x     exchange  // the request it carries: one at a time
	// resp, hdr and body are a plain answer's head and body (plainHead).
	resp http.Response
	hdr  http.Header
	body sizedBody
	// expire makes every read and write fail at once (a request's
	// context ended); made once, not per request.
	expire func()
}

// postRequest is what http.ReadResponse is told the answer is for.
var postRequest = &http.Request{Method: http.MethodPost}

// newConnPool returns a pool for base's host, or nil when base must go
// through net/http (a proxy applies, or the URL carries user:password for
// basic auth). Its TLS connections use the configured TLS settings (CA,
// client certificate, server name, insecure_skip_verify).
func newConnPool(base *url.URL, set *settings, dialer *net.Dialer, timeout time.Duration, max int) *connPool {
	if p, err := set.proxy(&http.Request{URL: base}); err != nil || p != nil || base.User != nil {
		return nil
	}
	port := base.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[base.Scheme]
	}
	p := &connPool{host: base.Host, addr: net.JoinHostPort(base.Hostname(), port), dial: dialer.DialContext,
		timeout: timeout, idleFor: 90 * time.Second, max: max}
	if base.Scheme == "https" {
		p.tls = set.tls.Clone()
		if p.tls.ServerName == "" {
			p.tls.ServerName = base.Hostname()
		}
		p.tls.NextProtos = []string{"http/1.1"}
	}
	return p
}

// get returns an idle connection (reused true) or a new one; now is the
// request's send time.
func (p *connPool) get(ctx context.Context, w *watch, now time.Time) (*conn, bool, error) {
	p.mu.Lock()
	for n := len(p.idle); n > 0; n = len(p.idle) {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		if now.Sub(c.since) < p.idleFor {
			p.mu.Unlock()
			return c, true, nil
		}
		c.nc.Close()
	}
	p.mu.Unlock()
	c, err := p.connect(ctx, w)
	return c, false, err
}

// connect dials (and shakes hands) within the connect timeout; the
// stream's watch ending stops it.
func (p *connPool) connect(ctx context.Context, w *watch) (*conn, error) {
	var stop context.CancelCauseFunc
	ctx, stop = context.WithCancelCause(ctx)
	defer stop(nil)
	w.setHook(func() { stop(w.cause) })
	defer w.setHook(nil)
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	nc = rxstamp.Wrap(nc)
	tcp := nc
	if p.tls != nil {
		tc := tls.Client(nc, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: nc.RemoteAddr(), Err: err}
		}
		nc = tc
	}
	c := &conn{nc: nc, tcp: tcp, br: bufio.NewReaderSize(nc, 4<<10)}
	c.expire = func() { c.nc.SetDeadline(time.Unix(1, 0)) }
	return c, nil
}

// put keeps c, idle since at, for the next request, or closes it when the
// pool is full or closed.
func (p *connPool) put(c *conn, at time.Time) {
	c.since = at
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.max {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// close closes the idle connections; connections in use close when their
// request ends.
func (p *connPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// exchange is one request on one connection; it lives in the connection,
// which carries one request at a time.
type exchange struct {
	pool *connPool
	c    *conn
	w    *watch // the stream's: its hook is c.expire
}

// roundTrip writes head, the Content-Length and payload, and reads the
// answer's head. When the stream's watch ends it early (a timeout, ctx
// ended), the connection's deadline passes, so every read or write on it
// fails at once. A reused connection the server had closed while idle
// (nothing of an answer came back) is replaced by a new one once, as
// net/http does.
func (p *connPool) roundTrip(ctx context.Context, w *watch, now time.Time, head, payload []byte) (*http.Response, *exchange, error) {
	for try := 0; ; try++ {
		c, reused, err := p.get(ctx, w, now)
		if err != nil {
			return nil, nil, err
		}
		x := &c.x
		*x = exchange{pool: p, c: c, w: w}
		w.setHook(c.expire)
		c.wb = append(c.wb[:0], head...)
		c.wb = strconv.AppendInt(c.wb, int64(len(payload)), 10)
		c.wb = append(c.wb, "\r\n\r\n"...)
		c.wb = append(c.wb, payload...)
		nothing := true // no byte of an answer came
		if err = c.send(!reused || now.Sub(c.since) < pendIdle); err == nil {
			if _, err = c.br.Peek(1); err == nil {
				nothing = false
				hr := c.plainHead()
				if hr == nil {
					hr, err = http.ReadResponse(c.br, postRequest)
				}
				if err == nil {
					return hr, x, nil
				}
			}
		}
		w.setHook(nil)
		c.nc.Close()
		if !reused || !nothing || try > 0 || w.err() != nil || !staleConn(err) {
			return nil, nil, err
		}
	}
}

// pendIdle is how long a kept connection may have been idle for its
// request to be pended (send): a server's close of a connection idle
// longer may already have come, and the pended read would learn of it
// only from the server's reset of the request, not from the end of the
// stream a read right after the write sees.
const pendIdle = time.Second

// pender is a connection whose next Read can write a request first
// (rxstamp.Conn.Pend).
type pender interface{ Pend(p []byte) }

// send writes the request in c.wb. With pend, on a plain TCP connection
// with an empty read buffer, the write is left to the read of the
// answer's first bytes (rxstamp.Conn.Pend): one system call less per
// request where the answer comes after the write returned; elsewhere it
// is a write.
func (c *conn) send(pend bool) error {
	if pc, ok := c.nc.(pender); ok && pend && c.br.Buffered() == 0 {
		pc.Pend(c.wb)
		return nil
	}
	_, err := c.nc.Write(c.wb)
	return err
}

// staleConn says whether err is what a keep-alive connection the server
// closed while it sat idle gives: the write refused, or the end of the
// stream (or a reset) before any byte of an answer.
func staleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// release ends the exchange and its stream's watch: the connection goes
// back to the pool when reuse is true (the answer was read to its end,
// the server keeps the connection open) and the watch had not expired it;
// else it is closed.
func (x *exchange) release(reuse bool, at time.Time) {
	if x.w.end() && reuse {
		x.pool.put(x.c, at)
		return
	}
	x.c.nc.Close()
}

// requestHead is the start of every streamed POST to path, up to the
// Content-Length value; lines are the configured header lines
// (Authorization, http_headers), each ending in CRLF.
func requestHead(host, path, userAgent string, lines []byte) []byte {
	b := []byte("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent +
		"\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n")
	b = append(b, lines...)
	return append(b, "Content-Length: "...)
}
