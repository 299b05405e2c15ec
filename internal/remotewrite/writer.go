// Package remotewrite pushes samples with their own timestamps to a
// Prometheus remote-write 1.0 endpoint (snappy-compressed protobuf), as
// Prometheus' --web.enable-remote-write-receiver (2.33+), Mimir, Thanos
// receive and VictoriaMetrics accept. Samples are buffered (bounded) and
// sent in batches; nothing blocks the caller: when the buffer is full a
// sample is dropped and counted. Sending is client_golang's
// exp/api/remote: retried with exponential backoff and jitter (and the
// server's Retry-After) on network errors, 5xx and 429, for at most
// MaxElapsed per batch; other 4xx answers, and any answer saying "out of
// bounds" or "too old" (RefusedForGood), are final. Every sample ends
// acknowledged, dropped or failed, and Stats counts each.
package remotewrite

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/prompb"

	"github.com/joulemark/joulemark/internal/secretfile"
)

// Sample is one value of one series at one instant.
type Sample struct {
	// Labels includes __name__.
	Labels      map[string]string
	Value       float64
	TimestampMs int64
}

// Config says where and how to write.
type Config struct {
	URL string
	// HTTP carries auth (bearer, basic), TLS and extra headers such as
	// X-Scope-OrgID; the zero value is plain HTTP.
	HTTP config.HTTPClientConfig
	// BatchSize is the most samples in one request (default 2000).
	BatchSize int
	// FlushInterval sends a partial batch after this long (default 1s).
	FlushInterval time.Duration
	// BufferSize bounds the samples waiting to be sent (default 100000).
	BufferSize int
	// Timeout is the per-request timeout (default 10s).
	Timeout time.Duration
	// MaxElapsed bounds the sending of one batch, retries included
	// (default 1m); a request still in flight then is cancelled.
	MaxElapsed time.Duration
	// MinBackoff and MaxBackoff bound the wait between retries (defaults 100ms, 5s).
	MinBackoff, MaxBackoff time.Duration
	// UserAgent is sent with each request.
	UserAgent string
}

// Stats counts what happened to the samples given to a Writer.
type Stats struct {
	Enqueued     int64 `json:"enqueued"`
	Acknowledged int64 `json:"acknowledged"`
	Dropped      int64 `json:"dropped"` // buffer full
	Failed       int64 `json:"failed"`  // rejected or retries exhausted
	Retries      int64 `json:"retries"`
	Requests     int64 `json:"requests"`
}

// Lost is every sample that will never reach the server.
func (s Stats) Lost() int64 { return s.Dropped + s.Failed }

// Writer buffers and sends samples. It is safe for concurrent use.
type Writer struct {
	cfg   Config
	shown string // cfg.URL with its password redacted, for messages
	api   *remoteapi.API
	log   *slog.Logger

	mu      sync.Mutex
	buf     []Sample
	stats   Stats
	lastErr error
	kick    chan struct{}
	closing chan struct{}
	done    chan struct{}
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
}

// withDefaults fills what the zero value leaves open.
func (cfg Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 2000
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = 100000
	}
	def(&cfg.FlushInterval, time.Second)
	def(&cfg.Timeout, 10*time.Second)
	def(&cfg.MaxElapsed, time.Minute)
	def(&cfg.MinBackoff, 100*time.Millisecond)
	def(&cfg.MaxBackoff, 5*time.Second)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "joulemark"
	}
	return cfg
}

// New validates cfg and starts the sending loop.
func New(cfg Config, logger *slog.Logger) (*Writer, error) {
	if cfg.URL == "" {
		return nil, errors.New("remote write: empty URL")
	}
	shown := secretfile.RedactURL(cfg.URL)
	if err := cfg.HTTP.Validate(); err != nil {
		return nil, fmt.Errorf("remote write %s: http config: %w", shown, err)
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	client, err := config.NewClientFromConfig(cfg.HTTP, "remote_write", config.WithUserAgent(cfg.UserAgent))
	if err != nil {
		return nil, fmt.Errorf("remote write %s: %w", shown, err)
	}
	client.Timeout = cfg.Timeout
	w := &Writer{
		cfg: cfg, shown: shown, log: logger,
		kick: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{}),
	}
	// Every attempt is counted where it is made: Requests and Retries are
	// exact.
	client.Transport = countingTransport{next: client.Transport, w: w}
	w.api, err = remoteapi.NewAPI(cfg.URL,
		remoteapi.WithAPIPath(""), // cfg.URL is the full write endpoint
		remoteapi.WithAPIHTTPClient(client),
		remoteapi.WithAPIBackoff(remoteapi.BackoffConfig{Min: cfg.MinBackoff, Max: cfg.MaxBackoff}), // bounded by MaxElapsed
	)
	if err != nil {
		return nil, fmt.Errorf("remote write %s: %w", shown, err)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.loop()
	return w, nil
}

// Append queues s; it returns false (and counts a drop) when the buffer is
// full or the writer is closed.
func (w *Writer) Append(s Sample) bool {
	w.mu.Lock()
	if w.closed || len(w.buf) >= w.cfg.BufferSize {
		w.stats.Dropped++
		w.mu.Unlock()
		return false
	}
	w.buf = append(w.buf, s)
	w.stats.Enqueued++
	full := len(w.buf) >= w.cfg.BatchSize
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// Stats returns the counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Pending is the number of samples waiting to be sent.
func (w *Writer) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf)
}

// LastError is the most recent send error, or nil.
func (w *Writer) LastError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// Close flushes what is buffered (until ctx ends) and stops the writer.
// When ctx ends first, sending is cancelled and every sample not yet
// acknowledged is counted as failed.
func (w *Writer) Close(ctx context.Context) (Stats, error) {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.closing)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.cancel()
		<-w.done
	}
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := int64(len(w.buf)); n > 0 {
		w.stats.Failed += n
		w.buf = nil
	}
	if w.stats.Lost() > 0 {
		return w.stats, fmt.Errorf("remote write %s: %d of %d samples lost (last error: %v)", w.shown, w.stats.Lost(), w.stats.Enqueued+w.stats.Dropped, w.lastErr)
	}
	return w.stats, nil
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(w.cfg.FlushInterval)
	defer t.Stop()
	ctx := w.ctx
	for {
		closing := false
		select {
		case <-w.kick:
		case <-t.C:
		case <-w.closing:
			closing = true
		}
		for {
			batch := w.take()
			if len(batch) == 0 {
				break
			}
			w.send(ctx, batch)
			if !closing && len(batch) < w.cfg.BatchSize {
				break
			}
		}
		if closing {
			return
		}
	}
}

func (w *Writer) take() []Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.buf), w.cfg.BatchSize)
	if n == 0 {
		return nil
	}
	batch := make([]Sample, n)
	copy(batch, w.buf[:n])
	w.buf = append(w.buf[:0], w.buf[n:]...)
	return batch
}

// send writes one batch, retries included, and counts its samples as
// acknowledged or failed.
func (w *Writer) send(ctx context.Context, batch []Sample) {
	req, err := writeRequest(batch)
	if err != nil {
		w.fail(len(batch), err)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, w.cfg.MaxElapsed)
	defer cancel()
	w.mu.Lock()
	before := w.stats.Requests
	w.mu.Unlock()
	var last error // this batch's last failed attempt
	wctx, stop := context.WithCancel(sctx)
	defer stop()
	refused := false // the server refuses these samples for good
	_, err = w.api.Write(wctx, remoteapi.WriteV1MessageType, req, remoteapi.WithWriteRetryCallback(func(err error) {
		last = err
		w.setErr(err)
		if refused = RefusedForGood(err); refused {
			stop() // the same samples would be refused again
			return
		}
		w.log.Warn("remote write failed, retrying", "url", w.shown, "err", err)
	}))
	w.mu.Lock()
	w.stats.Retries += max(0, w.stats.Requests-before-1)
	w.mu.Unlock()
	if err != nil {
		switch {
		case refused:
			err = fmt.Errorf("not retried, the server refuses these samples for good: %w", last)
		case sctx.Err() != nil:
			// Cut short while retrying: say why, with the server's answer.
			why := fmt.Sprintf("no success within %s", w.cfg.MaxElapsed)
			if ctx.Err() != nil {
				why = "cancelled by Close"
			}
			if last != nil {
				err = fmt.Errorf("%s; last error: %w", why, last)
			} else {
				err = fmt.Errorf("%s: %w", why, err)
			}
		}
		w.fail(len(batch), err)
		return
	}
	w.mu.Lock()
	w.stats.Acknowledged += int64(len(batch))
	w.mu.Unlock()
}

// RefusedForGood reports whether a failed write's answer says its samples
// can never be accepted (Prometheus answers a sample outside its TSDB's
// appendable window "out of bounds" or "too old", even with a 5xx):
// retrying would only delay the rest for MaxElapsed.
func RefusedForGood(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "out of bounds") || strings.Contains(msg, "too old")
}

func (w *Writer) fail(n int, err error) {
	w.log.Error("remote write batch lost", "url", w.shown, "samples", n, "err", err)
	w.mu.Lock()
	w.stats.Failed += int64(n)
	w.lastErr = err
	w.mu.Unlock()
}

func (w *Writer) setErr(err error) {
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
}

// countingTransport counts every request the writer makes.
type countingTransport struct {
	next http.RoundTripper
	w    *Writer
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.w.mu.Lock()
	t.w.stats.Requests++
	t.w.mu.Unlock()
	return t.next.RoundTrip(req)
}

// Encode builds the snappy-compressed WriteRequest for samples, grouping them
// into series (labels sorted by name) with samples in timestamp order.
func Encode(samples []Sample) ([]byte, error) {
	req, err := writeRequest(samples)
	if err != nil {
		return nil, err
	}
	raw, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("remote write: encoding: %w", err)
	}
	return snappy.Encode(nil, raw), nil
}

// writeRequest groups samples into series (labels sorted by name), each
// series' samples in timestamp order.
func writeRequest(samples []Sample) (*prompb.WriteRequest, error) {
	type series struct {
		labels  []prompb.Label
		samples []prompb.Sample
	}
	index := map[string]*series{}
	var order []string
	var key bytes.Buffer
	for _, s := range samples {
		names := slices.Sorted(maps.Keys(s.Labels))
		key.Reset()
		for _, n := range names {
			key.WriteString(n)
			key.WriteByte(0)
			key.WriteString(s.Labels[n])
			key.WriteByte(0)
		}
		k := key.String()
		ser, ok := index[k]
		if !ok {
			if s.Labels["__name__"] == "" {
				return nil, fmt.Errorf("remote write: sample without __name__ label: %v", s.Labels)
			}
			ser = &series{}
			for _, n := range names {
				ser.labels = append(ser.labels, prompb.Label{Name: n, Value: s.Labels[n]})
			}
			index[k] = ser
			order = append(order, k)
		}
		ser.samples = append(ser.samples, prompb.Sample{Value: s.Value, Timestamp: s.TimestampMs})
	}
	req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, len(order))}
	for _, k := range order {
		ser := index[k]
		slices.SortStableFunc(ser.samples, func(a, b prompb.Sample) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: ser.labels, Samples: ser.samples})
	}
	return req, nil
}
