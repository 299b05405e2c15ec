package querysplit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// countingTransport records, for every instant query, how many samples
// its answer held.
type countingTransport struct {
	mu      sync.Mutex
	samples []int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/api/v1/query") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var r struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &r) == nil {
		n := 0
		for _, s := range r.Data.Result {
			n += len(s.Values)
		}
		c.mu.Lock()
		c.samples = append(c.samples, n)
		c.mu.Unlock()
	}
	return resp, nil
}

// TestSplitUnderLimit: 12 series over 10 minutes (7 200 samples) in a
// Prometheus that refuses queries loading over 500 samples (the census
// loads 12 series × 33 slots). One query fails there; the
// split read returns every sample, in the matrix one query returns
// without the limit, and no query it sends holds more than 500.
func TestSplitUnderLimit(t *testing.T) {
	const limit = 500
	ctx := context.Background()
	startMs := int64(1_750_000_000_000)
	var in []remotewrite.Sample
	want := model.Matrix{}
	for i := range 12 {
		lbls := map[string]string{"__name__": "m", "s": fmt.Sprintf("%02d", i)}
		ss := &model.SampleStream{Metric: model.Metric{"__name__": "m", "s": model.LabelValue(fmt.Sprintf("%02d", i))}}
		add := func(ts int64, v float64) {
			in = append(in, remotewrite.Sample{Labels: lbls, Value: v, TimestampMs: ts})
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.Time(ts), Value: model.SampleValue(v)})
		}
		for k := range 600 {
			add(startMs+int64(k+1)*1000, float64(i*1000+k))
		}
		want = append(want, ss)
	}
	endMs := startMs + 600_000

	for _, maxSamples := range []int{limit, 0} {
		s, err := promserver.Start(ctx, promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb"), MaxSamples: maxSamples})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.AppendSamples(ctx, in); err != nil {
			t.Fatal(err)
		}
		ct := &countingTransport{}
		client, err := api.NewClient(api.Config{Address: s.URL(), RoundTripper: ct})
		if err != nil {
			t.Fatal(err)
		}
		a := v1.NewAPI(client)
		if maxSamples == 0 { // no limit: one query, the reference
			got, err := (&Reader{API: a}).Read(ctx, "m", startMs, endMs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("one query without a limit: %d series, not the samples written", len(got))
			}
			continue
		}
		if _, err := (&Reader{API: a}).Read(ctx, "m", startMs, endMs); err == nil || !strings.Contains(err.Error(), "too many samples") {
			t.Fatalf("one query over the limit: err %v, want Prometheus' too many samples", err)
		}
		ct.samples = nil
		got, err := (&Reader{API: a, MaxSamples: limit, Timeout: time.Minute}).Read(ctx, "m", startMs, endMs)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("split read: %d series, not the samples written", len(got))
		}
		if len(ct.samples) < 7200/limit {
			t.Errorf("%d queries for 7 200 samples under a limit of %d", len(ct.samples), limit)
		}
		for i, n := range ct.samples {
			if n > limit {
				t.Errorf("query %d held %d samples, over the limit %d", i, n, limit)
			}
		}
	}
}

// TestCensusLimitTooSmall: samples sharing a millisecond over the limit
// cannot be split; the error says so.
func TestCensusLimitTooSmall(t *testing.T) {
	ctx := context.Background()
	s, err := promserver.Start(ctx, promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var in []remotewrite.Sample
	for i := range 5 {
		in = append(in, remotewrite.Sample{Labels: map[string]string{"__name__": "m", "s": fmt.Sprint(i)}, Value: 1, TimestampMs: 1_750_000_000_500})
	}
	if err := s.AppendSamples(ctx, in); err != nil {
		t.Fatal(err)
	}
	client, err := api.NewClient(api.Config{Address: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Reader{API: v1.NewAPI(client), MaxSamples: 3}).Read(ctx, "m", 1_750_000_000_000, 1_750_000_001_000)
	if err == nil || !strings.Contains(err.Error(), "exceed the sample limit 3") {
		t.Fatalf("err %v, want the millisecond over the limit", err)
	}
}
