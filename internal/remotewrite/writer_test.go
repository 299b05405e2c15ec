package remotewrite

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/prompb"
)

// receiver is a remote-write endpoint that decodes what it gets and answers
// with the status codes it is told to, in order.
type receiver struct {
	mu      sync.Mutex
	got     []prompb.TimeSeries
	headers []http.Header
	codes   []int
	calls   atomic.Int64
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	n := r.calls.Add(1)
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, req.Header.Clone())
	if int(n) <= len(r.codes) && r.codes[n-1] != http.StatusNoContent {
		http.Error(w, "injected", r.codes[n-1])
		return
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.got = append(r.got, wr.Timeseries...)
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) samples() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ts := range r.got {
		n += len(ts.Samples)
	}
	return n
}

func fastConfig(url string) Config {
	return Config{URL: url, BatchSize: 3, FlushInterval: 10 * time.Millisecond,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: 2 * time.Second}
}

func sample(slot string, ts int64, v float64) Sample {
	return Sample{Labels: map[string]string{"__name__": "joulemark_request_output_tokens", "run_id": "r1", "slot": slot}, Value: v, TimestampMs: ts}
}

func TestWriterDeliversEverySampleWithItsTimestamp(t *testing.T) {
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	cfg := fastConfig(srv.URL)
	cfg.HTTP.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"team-a"}}}}
	w, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		w.Append(sample([]string{"0", "1"}[i%2], int64(1000+i), float64(i)))
	}
	st, err := w.Close(context.Background())
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	if st.Acknowledged != 10 || st.Lost() != 0 {
		t.Fatalf("stats = %+v, want 10 acknowledged, none lost", st)
	}
	if got := rec.samples(); got != 10 {
		t.Fatalf("receiver got %d samples, want 10", got)
	}
	seen := map[int64]float64{}
	for _, ts := range rec.got {
		for i := 1; i < len(ts.Labels); i++ {
			if ts.Labels[i-1].Name >= ts.Labels[i].Name {
				t.Fatalf("labels not sorted: %v", ts.Labels)
			}
		}
		for _, s := range ts.Samples {
			seen[s.Timestamp] = s.Value
		}
	}
	for i := range 10 {
		if v, ok := seen[int64(1000+i)]; !ok || v != float64(i) {
			t.Errorf("sample at %d: got %v (present %v), want %d", 1000+i, v, ok, i)
		}
	}
	if h := rec.headers[0]; h.Get("X-Scope-OrgID") != "team-a" || h.Get("Content-Encoding") != "snappy" || h.Get("X-Prometheus-Remote-Write-Version") != "0.1.0" {
		t.Errorf("headers = %v", h)
	}
}

func TestWriterRetriesOnlyWhatRetryingCanFix(t *testing.T) {
	for _, tc := range []struct {
		name      string
		codes     []int
		wantAck   int64
		wantFail  int64
		wantCalls int64
	}{
		{"5xx then success", []int{503, 500, 204}, 2, 0, 3},
		{"429 then success", []int{429, 204}, 2, 0, 2},
		{"400 is final", []int{400}, 0, 2, 1},
		{"404 is final", []int{404}, 0, 2, 1},
		{"408 is final", []int{408}, 0, 2, 1},
		{"413 is final", []int{413}, 0, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &receiver{codes: tc.codes}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			w, err := New(fastConfig(srv.URL), nil)
			if err != nil {
				t.Fatal(err)
			}
			w.Append(sample("0", 1, 1))
			w.Append(sample("0", 2, 2))
			st, err := w.Close(context.Background())
			if st.Acknowledged != tc.wantAck || st.Failed != tc.wantFail {
				t.Fatalf("stats = %+v, want ack %d failed %d", st, tc.wantAck, tc.wantFail)
			}
			if (tc.wantFail > 0) != (err != nil) {
				t.Fatalf("close error = %v, want error %v", err, tc.wantFail > 0)
			}
			if got := rec.calls.Load(); got != tc.wantCalls {
				t.Fatalf("server saw %d requests, want %d", got, tc.wantCalls)
			}
			if st.Requests != tc.wantCalls || st.Retries != tc.wantCalls-1 {
				t.Fatalf("stats count %d requests, %d retries; server saw %d requests", st.Requests, st.Retries, tc.wantCalls)
			}
			if ua := rec.headers[0].Get("User-Agent"); ua != "joulemark" {
				t.Errorf("User-Agent %q, want joulemark", ua)
			}
		})
	}
}

func TestWriterBoundedBufferCountsDrops(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-block
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	defer close(block)
	cfg := fastConfig(srv.URL)
	cfg.BufferSize = 5
	cfg.BatchSize = 1000
	cfg.FlushInterval = time.Hour
	w, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := range 8 {
		if w.Append(sample("0", int64(i), 1)) {
			accepted++
		}
	}
	if accepted != 5 {
		t.Fatalf("accepted %d samples, want 5 (buffer size)", accepted)
	}
	if st := w.Stats(); st.Dropped != 3 || st.Enqueued != 5 {
		t.Fatalf("stats = %+v, want 3 dropped, 5 enqueued", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	st, err := w.Close(ctx)
	if err == nil || st.Lost() != 8 {
		t.Fatalf("close with a stuck server: stats %+v err %v, want all 8 lost and an error", st, err)
	}
}

func TestWriterUnreachableServerLosesNothingSilently(t *testing.T) {
	cfg := fastConfig("http://127.0.0.1:1/api/v1/write")
	cfg.MaxElapsed = 50 * time.Millisecond
	w, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(sample("0", 1, 1))
	st, err := w.Close(context.Background())
	if err == nil || st.Failed != 1 || st.Acknowledged != 0 {
		t.Fatalf("stats %+v err %v: want the sample counted failed and an error", st, err)
	}
	if w.LastError() == nil {
		t.Fatal("LastError is nil after a failed send")
	}
}

// A server that keeps answering 503 is retried until MaxElapsed, then the
// batch is counted failed with the server's answer as the reason.
func TestWriterMaxElapsedBoundsRetries(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	cfg := fastConfig(srv.URL)
	cfg.MaxElapsed = 100 * time.Millisecond
	w, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(sample("0", 1, 1))
	st, err := w.Close(context.Background())
	// The last request may be cut by the deadline before the server sees it.
	if n := calls.Load(); err == nil || st.Failed != 1 || st.Acknowledged != 0 || st.Retries != st.Requests-1 || st.Requests < n || st.Requests > n+1 {
		t.Fatalf("stats %+v (server saw %d) err %v: want the sample failed after retries", st, n, err)
	}
	if !strings.Contains(err.Error(), "no success within 100ms; last error: server returned HTTP status 503") {
		t.Errorf("error %q does not say why and name the server's answer", err)
	}
}

// TestWriterOutOfBoundsNotRetried: a server refusing a batch as "out of
// bounds" or "too old" (Prometheus does so with a 500) is not retried: the
// same samples would be refused until MaxElapsed (issue 33 medium 12: runs
// push retried for 60 s).
func TestWriterOutOfBoundsNotRetried(t *testing.T) {
	for _, answer := range []string{"out of bounds", "too old sample"} {
		var calls atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			http.Error(w, answer, http.StatusInternalServerError)
		}))
		cfg := fastConfig(srv.URL)
		w, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.Append(sample("0", 1, 1))
		st, err := w.Close(context.Background())
		srv.Close()
		if calls.Load() != 1 || st.Failed != 1 || err == nil || !strings.Contains(err.Error(), "not retried") || !strings.Contains(err.Error(), answer) {
			t.Errorf("%q: %d calls, stats %+v, err %v: want one call, the batch failed, not retried", answer, calls.Load(), st, err)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"empty url", Config{}},
		{"bearer and basic", Config{URL: "http://x", HTTP: config.HTTPClientConfig{BearerToken: "a", BasicAuth: &config.BasicAuth{Username: "u"}}}},
	} {
		if _, err := New(tc.cfg, nil); err == nil {
			t.Errorf("%s: New accepted a bad config", tc.name)
		}
	}
}

func TestEncodeRejectsNamelessSample(t *testing.T) {
	if _, err := Encode([]Sample{{Labels: map[string]string{"a": "b"}}}); err == nil {
		t.Fatal("Encode accepted a sample without __name__")
	}
}

func BenchmarkEncode(b *testing.B) {
	samples := make([]Sample, 2000)
	for i := range samples {
		samples[i] = sample([]string{"0", "1", "2", "3"}[i%4], int64(i), float64(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(samples); err != nil {
			b.Fatal(err)
		}
	}
}
