package exporter

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/gpu"
	"github.com/joulemark/joulemark/phaseapi"
)

// scrape fetches /metrics with the given headers and decodes it.
func scrape(t *testing.T, e *Exporter, headers map[string]string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	e.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("/metrics %v: %d %s", headers, rec.Code, rec.Body)
	}
	var body io.Reader = rec.Body
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	ct := rec.Header().Get("Content-Type")
	dec := expfmt.NewDecoder(body, expfmt.ResponseFormat(rec.Header()))
	out := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decoding /metrics (%s): %v", ct, err)
		}
		if _, dup := out[mf.GetName()]; dup {
			t.Errorf("family %s appears twice", mf.GetName())
		}
		out[mf.GetName()] = mf
	}
	return out, ct
}

// canonical renders the contract families with their series sorted, for
// comparing two expositions.
func canonical(t *testing.T, fams map[string]*dto.MetricFamily) string {
	t.Helper()
	var names []string
	for n := range fams {
		if strings.HasPrefix(n, "joulemark_") && !strings.HasPrefix(n, "joulemark_exporter_") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		mf := fams[n]
		ms := slices.Clone(mf.GetMetric())
		slices.SortFunc(ms, compareMetrics)
		seen := map[string]bool{}
		for _, m := range ms {
			k := m.String()
			if seen[k] {
				t.Errorf("%s: series %v twice", n, m.GetLabel())
			}
			seen[k] = true
		}
		c := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: ms}
		if _, err := expfmt.MetricFamilyToText(&b, c); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestMetricsFastPathMatchesPromhttp: the text fast path (frozen runs as
// pre-encoded text) serves exactly the series promhttp serves, plain and
// gzip-compressed.
func TestMetricsFastPathMatchesPromhttp(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 3, Seed: 4, NoiseWatts: 0.5}, Config{MaxRuns: 5})
	for _, id := range []string{"r-c", "r-a", "r-d", "r-b", "r-f", "r-e", "r-live"} {
		h.post(id, phaseapi.Idle)
		h.step(time.Second)
		h.post(id, phaseapi.Formal)
		h.step(time.Second)
		if id != "r-live" {
			if _, err := h.client.EndRun(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}
		h.step(200 * time.Millisecond)
	}
	proto, ct := scrape(t, h.exp, map[string]string{"Accept": `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`})
	if !strings.Contains(ct, "protobuf") {
		t.Fatalf("protobuf request answered %s", ct)
	}
	want := canonical(t, proto)
	if !strings.Contains(want, `run_id="r-live"`) || !strings.Contains(want, `run_id="r-e"`) || strings.Contains(want, `run_id="r-c"`) {
		t.Fatalf("unexpected runs in the exposition:\n%s", want)
	}
	for _, hdr := range []map[string]string{
		nil,
		{"Accept-Encoding": "gzip"},
		{"Accept": "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,*/*;q=0.1", "Accept-Encoding": "gzip, deflate"},
		{"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"}, // Prometheus 2.42
	} {
		got, ct := scrape(t, h.exp, hdr)
		if !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("%v: content type %s", hdr, ct)
		}
		if g := canonical(t, got); g != want {
			t.Errorf("%v: fast path differs from promhttp:\n--- fast\n%s\n--- promhttp\n%s", hdr, g, want)
		}
	}
	// the raw text keeps one HELP/TYPE per family and is valid for the text parser
	rec := httptest.NewRecorder()
	h.exp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if n := strings.Count(rec.Body.String(), "# TYPE joulemark_phase_energy_joules "); n != 1 {
		t.Errorf("%d TYPE lines for joulemark_phase_energy_joules", n)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String())); err != nil {
		t.Errorf("text parser: %v", err)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "deflate, gzip;q=0.5": true, "gzip;q=0": false,
		"identity": false, "br, gzip": true, "gzip; q=0.0": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v", h, got)
		}
	}
}
