// Package openai is a streaming client for OpenAI-compatible inference
// servers (vLLM, SGLang, TGI, llama.cpp, the joulemark simulated engine):
// /v1/completions and /v1/chat/completions over server-sent events, timed per
// chunk, with the server's own token usage.
package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/rxstamp"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// Endpoint is the API the client calls.
type Endpoint string

// Endpoints.
const (
	Completions Endpoint = "completions" // POST {base}/completions
	Chat        Endpoint = "chat"        // POST {base}/chat/completions
)

// Config configures a Client. Zero timeouts mean no limit.
type Config struct {
	// BaseURL is the OpenAI base URL, e.g. http://host:8000/v1.
	BaseURL string
	// APIKey is sent as a bearer token; it never appears in errors.
	APIKey            string
	ConnectTimeout    time.Duration
	FirstTokenTimeout time.Duration
	TotalTimeout      time.Duration
	// IdleTimeout fails a request (contract.ClassTimeoutIdle) when no byte of its
	// answer arrived for this long: before the headers or between two reads
	// of the stream.
	IdleTimeout time.Duration
	// MaxConns bounds idle connections kept per host (default 1024).
	MaxConns int
	// RequireUsage fails a request whose stream carries no usage
	// (contract.ClassMissingUsage) instead of counting its tokens from the chunks.
	RequireUsage bool
	// UserAgent is sent with each request (default "joulemark").
	UserAgent string
	// HTTP is the engine's HTTP client configuration (prometheus/common's,
	// as --target.http-config-file gives it): tls_config for the client's
	// own TLS connections and net/http, authorization or basic_auth (not
	// with APIKey) and http_headers on every request, proxy_url (or
	// proxy_from_environment) sending the requests through net/http. Its
	// secrets are read once, by New. oauth2 is not supported; streams are
	// HTTP/1.1, so enable_http2 does not apply. The zero value is no
	// configuration: the environment's proxy, the system's roots.
	HTTP config.HTTPClientConfig
}

// Client sends streaming requests. It is safe for concurrent use.
type Client struct {
	cfg   Config
	base  string // without trailing slash, ends in /v1 usually
	root  string // base without a trailing /v1: where /health and /metrics live
	http  *http.Client
	set   *settings // Config.HTTP read: TLS, proxy, headers
	pool  sync.Pool
	conns *connPool           // the streamed POSTs; nil: through http (a proxy applies)
	heads map[Endpoint][]byte // request heads for conns, by endpoint
}

// New validates cfg and returns a client with its own connection pool.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target URL %q: want http(s)://host:port/v1", secretfile.RedactURL(cfg.BaseURL))
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "joulemark"
	}
	if strings.ContainsAny(cfg.APIKey, "\r\n") || strings.ContainsAny(cfg.UserAgent, "\r\n") {
		return nil, errors.New("API key or user agent: line breaks are not allowed in a header")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	root := strings.TrimSuffix(base, "/v1")
	set, err := readSettings(&cfg, u)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               set.proxy,
		ProxyConnectHeader:  set.proxyHeader,
		TLSClientConfig:     set.tls,
		DialContext:         dialer.DialContext,
		MaxIdleConns:        cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSHandshakeTimeout: cfg.ConnectTimeout,
	}
	c := &Client{cfg: cfg, base: base, root: root, http: &http.Client{Transport: tr}, set: set}
	if bu, err := url.Parse(base); err == nil {
		c.conns = newConnPool(bu, set, dialer, cfg.ConnectTimeout, cfg.MaxConns)
		c.heads = map[Endpoint][]byte{}
		for _, e := range []Endpoint{Completions, Chat} {
			pu, err := url.Parse(base + e.Path())
			if err != nil {
				return nil, fmt.Errorf("target URL %q: %w", secretfile.RedactURL(cfg.BaseURL), err)
			}
			c.heads[e] = requestHead(bu.Host, pu.RequestURI(), cfg.UserAgent, set.lines)
		}
	}
	return c, nil
}

// Close drops the idle connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	if c.conns != nil {
		c.conns.close()
	}
}

// BaseURL is the OpenAI base URL.
func (c *Client) BaseURL() string { return c.base }

// RootURL is the server root (BaseURL without /v1): /health, /version and
// /metrics live there on vLLM and SGLang.
func (c *Client) RootURL() string { return c.root }

// Extras are engine parameters passed through as they are; nil means unset.
type Extras struct {
	IgnoreEOS   *bool    `json:"ignore_eos,omitempty" yaml:"ignore_eos,omitempty" name:"ignore-eos" help:"Send ignore_eos: true: every output runs to its drawn length, so runs compare token for token and an early stop counts as a short output. Off (the default), the model stops at its end-of-sequence as in production: lengths vary and J/token per request with them; a stop is never counted short."`
	MinTokens   *int     `json:"min_tokens,omitempty" yaml:"min_tokens,omitempty" kong:"-"`
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty" name:"temperature" help:"Send temperature."`
	Seed        *int64   `json:"seed,omitempty" yaml:"seed,omitempty" kong:"-"`
	// MaxTokens overrides every request's max_tokens when set.
	MaxTokens *int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty" name:"max-tokens" help:"Send this max_tokens on every request."`
	// EnableThinking sends chat_template_kwargs.enable_thinking (Qwen3,
	// DeepSeek-R1 style templates on vLLM and SGLang).
	EnableThinking *bool `json:"enable_thinking,omitempty" yaml:"enable_thinking,omitempty" kong:"-"`
}

// Request is one generation request.
type Request struct {
	Endpoint  Endpoint
	Model     string
	Prompt    string
	MaxTokens int
	Extras    Extras
	// KeepText keeps the generated content in Response.Text (for quality
	// checks); off, only its length and hash are kept.
	KeepText bool
}

// maxTokens is the max_tokens the request sends (0: none).
func (r *Request) maxTokens() int {
	if r.Extras.MaxTokens != nil {
		return *r.Extras.MaxTokens
	}
	return r.MaxTokens
}

// Response is what one request did, with its timing. Err is nil on success.
type Response struct {
	Send       time.Time
	FirstToken time.Time // zero when no token came
	End        time.Time
	// ITL holds the gaps between consecutive token-bearing chunks.
	ITL []time.Duration
	// Chunks counts token-bearing chunks (content or reasoning content).
	Chunks int
	// UsageReported says the stream carried usage; the token counts below
	// then are the server's. Otherwise CompletionTokens = Chunks.
	UsageReported    bool
	PromptTokens     int
	CompletionTokens int
	ReasoningTokens  int
	FinishReason     string
	Model            string
	StatusCode       int
	// TextChars and TextSHA256 describe the generated content (not the
	// reasoning); ReasoningChars the reasoning content.
	TextChars      int
	ReasoningChars int
	TextSHA256     string
	// Text is the generated content, with Request.KeepText only.
	Text string
	// RetryAfter is how long a 429 or 503 answer asked the client to
	// wait (its Retry-After header, at most MaxRetryAfter); 0 when none.
	RetryAfter time.Duration
	Err        error
}

// Path is the URL path suffix of the endpoint.
func (e Endpoint) Path() string {
	if e == Chat {
		return "/chat/completions"
	}
	return "/completions"
}

// state is what one stream needs, pooled between requests.
type state struct {
	body  []byte // the request body
	watch *watch
	sse   *SSEReader
	dec   decoder
	hash  hash.Hash
	sum   [sha256.Size]byte
	idle  idleReader // the body's, when an idle timeout is set
}

// Stream sends r and reads its stream to the end. It never returns nil; a
// failure is in Response.Err (an *Error carrying its Class).
func (c *Client) Stream(ctx context.Context, r *Request) *Response {
	resp := &Response{}
	st, _ := c.pool.Get().(*state)
	if st == nil {
		st = &state{sse: NewSSEReader(nil, 0), hash: sha256.New(), watch: newWatch()}
		runtime.AddCleanup(st, (*watch).unwatch, st.watch)
	}
	defer func() {
		st.sse.Reset(nil)
		c.pool.Put(st)
	}()
	payload, err := appendBody(st.body[:0], r)
	if err != nil {
		resp.Send = time.Now()
		resp.End = resp.Send
		resp.Err = &Error{Class: contract.ClassMalformedStream, Msg: "building request", Err: err}
		return resp
	}
	st.body = payload
	resp.Send = time.Now()
	w := st.watch
	w.start(ctx, resp.Send, &c.cfg)
	hr, x, err := c.post(ctx, w, resp.Send, r.Endpoint, payload)
	if err != nil {
		resp.End = time.Now()
		resp.Err = classify(endOf(w), err, false)
		return resp
	}
	complete := false
	defer func() {
		if x != nil {
			x.release(complete && !hr.Close, resp.End) // resp.End is set when complete
		} else {
			hr.Body.Close()
			endOf(w)
		}
	}()
	body := io.Reader(hr.Body)
	if c.cfg.IdleTimeout > 0 {
		w.progress()
		st.idle = newIdleReader(hr.Body, w)
		body = &st.idle
	}
	resp.StatusCode = hr.StatusCode
	if refused(w, hr, body, resp) {
		return resp
	}
	st.sse.Reset(body)
	var tcp net.Conn // nil through net/http: events are stamped when parsed
	if x != nil {
		tcp = x.c.tcp
	}
	complete = c.read(st, r, resp, tcp)
	return resp
}

// refused puts into resp the error of an answer that is no event stream
// (an HTTP error status, another content type); false when it is one.
func refused(w *watch, hr *http.Response, body io.Reader, resp *Response) bool {
	if hr.StatusCode/100 != 2 {
		msg, rerr := io.ReadAll(io.LimitReader(body, 512))
		resp.End = time.Now()
		if rerr != nil && len(msg) == 0 {
			resp.Err = classify(w.err(), rerr, true)
			return true
		}
		resp.Err = &Error{Class: contract.ClassHTTPStatus, StatusCode: hr.StatusCode, Msg: strings.TrimSpace(string(msg))}
		if hr.StatusCode == http.StatusTooManyRequests || hr.StatusCode == http.StatusServiceUnavailable {
			resp.RetryAfter = retryAfter(hr.Header.Get("Retry-After"), resp.End)
		}
		return true
	}
	if ct := hr.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "text/event-stream") {
		msg, _ := io.ReadAll(io.LimitReader(body, 200))
		resp.End = time.Now()
		resp.Err = &Error{Class: contract.ClassMalformedStream, Msg: fmt.Sprintf("answer is %s, not an event stream (streaming unsupported?): %s", ct, bytes.TrimSpace(msg))}
		return true
	}
	return false
}

// post sends the streamed request: over the client's own connections, or
// through net/http (x nil) where a proxy applies, with a context w
// cancels.
func (c *Client) post(ctx context.Context, w *watch, now time.Time, e Endpoint, payload []byte) (*http.Response, *exchange, error) {
	if e == "" {
		e = Completions
	}
	if c.conns != nil {
		return c.conns.roundTrip(ctx, w, now, c.heads[e], payload)
	}
	ctx = w.context(ctx)
	// A copy: the pooled payload is reused once Stream returns, and the
	// transport may still hold the body then.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+e.Path(), bytes.NewReader(bytes.Clone(payload)))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	c.setHeaders(req)
	hr, err := c.http.Do(req)
	return hr, nil, err
}

// setHeaders adds the configured headers (Authorization, http_headers) to
// a request sent through net/http.
func (c *Client) setHeaders(req *http.Request) {
	for k, vs := range c.set.header {
		req.Header[k] = append(req.Header[k], vs...)
	}
}

// arrivalOn is when the bytes of tcp's last read arrived: the kernel's
// stamp (never after now, so no clock read to compare it with), else now.
func arrivalOn(tcp net.Conn) time.Time {
	if t, ok := rxstamp.Last(tcp); ok {
		return t
	}
	return time.Now()
}

// read reads the stream to its end; it reports whether the answer was read
// to its last byte without error (the connection may then serve again).
// Each event's instant is when its last bytes reached tcp's socket (the
// kernel's receive timestamp, rxstamp, where the connection has one), not
// when this goroutine got a CPU to parse it.
func (c *Client) read(st *state, r *Request, resp *Response, tcp net.Conn) bool {
	w, h, eof := st.watch, st.hash, false
	h.Reset()
	if r.MaxTokens > 1 {
		resp.ITL = make([]time.Duration, 0, min(r.MaxTokens-1, 4096))
	}
	var last time.Time
	// The instant of the event just parsed, taken for ends and tokens only.
	arrival := func() time.Time { return arrivalOn(tcp) }
	var lowered *Error // a later usage block lowered the count
	done := false
	for {
		ev, err := st.sse.Next()
		if err != nil {
			resp.End = arrival()
			eof = err == io.EOF
			switch {
			case err == io.EOF && (done || resp.FinishReason != ""):
				// Complete: [DONE] seen, or at least a finish reason.
			case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
				resp.Err = &Error{Class: contract.ClassBrokenStream, Msg: "stream ended before [DONE] and before a finish_reason"}
				if cause := w.err(); cause != nil {
					resp.Err = classify(cause, err, true)
				}
			case errors.Is(err, ErrLineTooLong):
				resp.Err = &Error{Class: contract.ClassMalformedStream, Err: err}
			default:
				resp.Err = classify(w.err(), err, true)
			}
			break
		}
		if ev.Name == "error" {
			resp.End = arrival()
			resp.Err = &Error{Class: contract.ClassStreamError, Msg: truncate(ev.Data, 512)}
			break
		}
		data := bytes.TrimSpace(ev.Data)
		if bytes.Equal(data, []byte("[DONE]")) {
			done = true
			continue
		}
		if done {
			continue
		}
		ch, err := st.dec.decode(data)
		if err != nil {
			resp.End = arrival()
			class := contract.ClassMalformedStream
			if ue := (*UsageError)(nil); errors.As(err, &ue) {
				class = contract.ClassInvalidUsage
			}
			resp.Err = &Error{Class: class, Msg: "chunk " + truncate(data, 200), Err: err}
			break
		}
		if ch.err {
			resp.End = arrival()
			resp.Err = &Error{Class: contract.ClassStreamError, Msg: ch.errMsg}
			break
		}
		if len(ch.model) > 0 {
			if resp.Model != string(ch.model) {
				resp.Model = stringOf(ch.model, r.Model)
			}
			if r.Model != "" && resp.Model != r.Model {
				resp.End = arrival()
				resp.Err = &Error{Class: contract.ClassWrongModel, Msg: fmt.Sprintf("asked for model %q, the server answered with %q", r.Model, resp.Model)}
				break
			}
		}
		tokens := false
		if len(ch.text) > 0 {
			h.Write(ch.text)
			resp.TextChars += len(ch.text)
			if r.KeepText {
				resp.Text += string(ch.text)
			}
			tokens = true
		}
		if ch.reasoning > 0 {
			resp.ReasoningChars += ch.reasoning
			tokens = true
		}
		if len(ch.finish) > 0 && resp.FinishReason != string(ch.finish) {
			resp.FinishReason = stringOf(ch.finish, "stop", "length")
		}
		if tokens {
			now := arrival()
			resp.Chunks++
			if resp.FirstToken.IsZero() {
				resp.FirstToken = now
				w.firstToken()
			} else {
				resp.ITL = append(resp.ITL, now.Sub(last))
			}
			last = now
		}
		if ch.usage {
			if e := resp.applyUsage(ch); lowered == nil {
				lowered = e
			}
		}
	}
	resp.TextSHA256 = hexSum(h, st.sum[:0])
	if resp.Err == nil && lowered != nil {
		resp.Err = lowered
	}
	if resp.Err == nil {
		if e := checkAnswer(resp, r.maxTokens(), len(r.Prompt)); e != nil {
			resp.Err = e
		}
	}
	if !resp.UsageReported {
		resp.CompletionTokens = resp.Chunks
		if resp.Err == nil && c.cfg.RequireUsage {
			resp.Err = &Error{Class: contract.ClassMissingUsage, Msg: "the stream carried no usage (stream_options.include_usage unsupported?)"}
		}
	}
	return eof
}

// hexSum is h's sum in hex, sum (of sha256.Size) holding the bytes: one
// allocation, the string.
func hexSum(h hash.Hash, sum []byte) string {
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], h.Sum(sum))
	return string(hx[:])
}

// stringOf is b as a string: the first of known equal to it, without a
// copy, else a new string (a record keeps it for the run).
func stringOf(b []byte, known ...string) string {
	for _, k := range known {
		if string(b) == k {
			return k
		}
	}
	return string(b)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// Model is one entry of GET /v1/models. MaxModelLen is vLLM's context
// length (0 where the server does not expose it).
type Model struct {
	ID          string `json:"id"`
	Root        string `json:"root,omitempty"`
	OwnedBy     string `json:"owned_by,omitempty"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}

// Models lists the served models.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var out struct {
		Data []Model `json:"data"`
	}
	if err := c.getJSON(ctx, c.base+"/models", &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// Health calls GET {root}/health; nil means the server answered 2xx.
func (c *Client) Health(ctx context.Context) error {
	return c.getJSON(ctx, c.root+"/health", nil)
}

// Version returns the server's version from GET {root}/version (vLLM,
// SGLang's /get_server_info is not asked); "" when absent.
func (c *Client) Version(ctx context.Context) string {
	var out struct {
		Version string `json:"version"`
	}
	if err := c.getJSON(ctx, c.root+"/version", &out); err != nil {
		return ""
	}
	return out.Version
}

// Do sends req through the client's net/http transport with the
// configured TLS, proxy and headers (Authorization, http_headers): for
// other GETs to the engine, e.g. its /metrics.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	c.setHeaders(req)
	return c.http.Do(req)
}

// StatusError is a non-2xx answer to a GET.
type StatusError struct {
	URL        string
	StatusCode int
}

// applyUsage takes a chunk's usage block; a block lowering the completion
// tokens an earlier one reported is an invalid_usage error (returned).
func (resp *Response) applyUsage(ch *chunkView) *Error {
	var lowered *Error
	if resp.UsageReported && ch.complete < resp.CompletionTokens {
		lowered = &Error{Class: contract.ClassInvalidUsage, Msg: fmt.Sprintf("a second usage block lowers completion_tokens from %d to %d", resp.CompletionTokens, ch.complete)}
	}
	resp.UsageReported = true
	resp.PromptTokens = ch.prompt
	resp.CompletionTokens = ch.complete
	resp.ReasoningTokens = ch.reasonTok
	return lowered
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: status %d", secretfile.RedactURL(e.URL), e.StatusCode)
}

func (c *Client) getJSON(ctx context.Context, u string, out any) error {
	shown := secretfile.RedactURL(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", shown, err)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	c.setHeaders(req)
	hr, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", shown, secretfile.SecretsOf(u).Error(err))
	}
	defer hr.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hr.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("GET %s: reading answer: %w", shown, err)
	}
	if hr.StatusCode/100 != 2 {
		return &StatusError{URL: u, StatusCode: hr.StatusCode}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("GET %s: decoding answer: %w", shown, err)
	}
	return nil
}
