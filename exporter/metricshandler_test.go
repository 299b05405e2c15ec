package exporter

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
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

// TestMetricsFormatsServeTheSameSeries: text (plain, gzip, Prometheus 2
// and 3 Accept headers) serves exactly the series protobuf serves, live and
// frozen runs merged.
func TestMetricsFormatsServeTheSameSeries(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 3, Seed: 4, NoiseWatts: 0.5}, Config{MaxRuns: 5})
	for _, id := range []string{"r-c", "r-a", "r-d", "r-b", "r-f", "r-e", "r-live"} {
		h.post(id, contract.Idle)
		h.step(time.Second)
		h.post(id, contract.Formal)
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
			t.Errorf("%v: text differs from protobuf:\n--- text\n%s\n--- protobuf\n%s", hdr, g, want)
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

// rawScrape fetches /metrics with the given headers, undecoded.
func rawScrape(t *testing.T, e *Exporter, headers map[string]string) *httptest.ResponseRecorder {
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
	return rec
}

// gunzipOneMember decodes body as exactly one gzip member: a reader that
// stops after the first member (as some HTTP clients do) gets everything.
func gunzipOneMember(t *testing.T, body []byte) []byte {
	t.Helper()
	br := bytes.NewReader(body)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatalf("gzip header: %v", err)
	}
	zr.Multistream(false)
	text, err := io.ReadAll(zr) // checks the trailer's CRC-32 and size
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes after the first gzip member", br.Len())
	}
	// and Go's default reader (multistream, what Prometheus uses) agrees
	zr, err = gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := io.ReadAll(zr); err != nil || !bytes.Equal(again, text) {
		t.Fatalf("multistream gzip reader: %v, %d bytes, want %d", err, len(again), len(text))
	}
	return text
}

// stableLines keeps the lines of the joulemark families except the scrape
// duration: the Go and process collectors and the scrape duration change
// from one scrape to the next.
func stableLines(text []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(text)) {
		name := line
		if f := strings.Fields(line); strings.HasPrefix(line, "# ") && len(f) > 2 {
			name = f[2]
		}
		if strings.HasPrefix(name, "joulemark_") && !strings.HasPrefix(name, "joulemark_exporter_scrape_duration_seconds") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestMetricsGzipMatchesPlain: a gzip scrape decodes, as one gzip member,
// to exactly the bytes of the uncompressed scrape and to the series
// protobuf serves, while runs are added, frozen and evicted, and it passes
// promtool.
func TestMetricsGzipMatchesPlain(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 3, Seed: 7, NoiseWatts: 0.5}, Config{MaxRuns: 3})
	lifecycle := func(id string, end bool) {
		for _, p := range []contract.Phase{contract.Idle, contract.Formal, contract.Release} {
			h.post(id, p)
			h.step(700 * time.Millisecond)
		}
		if end {
			if _, err := h.client.EndRun(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}
		h.step(300 * time.Millisecond)
	}
	promtool := testenv.LookPath(t, "promtool")
	for _, st := range []struct {
		name          string
		do            func()
		present, gone []string // run IDs
	}{
		{"no runs", func() {}, nil, nil},
		{"one live run", func() { lifecycle("r-1", false) }, []string{"r-1"}, nil},
		{"frozen and live", func() {
			if _, err := h.client.EndRun(t.Context(), "r-1"); err != nil {
				t.Fatal(err)
			}
			h.step(300 * time.Millisecond)
			lifecycle("r-2", true)
			lifecycle("r-3", false)
		}, []string{"r-1", "r-2", "r-3"}, nil},
		{"evicted", func() {
			if _, err := h.client.EndRun(t.Context(), "r-3"); err != nil {
				t.Fatal(err)
			}
			lifecycle("r-4", true)
			lifecycle("r-5", true)
		}, []string{"r-3", "r-4", "r-5"}, []string{"r-1", "r-2"}},
		{"evicted with a live run", func() {
			lifecycle("r-6", true)
			lifecycle("r-7", false)
		}, []string{"r-4", "r-5", "r-6", "r-7"}, []string{"r-3"}},
	} {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			plain := rawScrape(t, h.exp, nil).Body.String()
			zrec := rawScrape(t, h.exp, map[string]string{"Accept-Encoding": "gzip"})
			if ce := zrec.Header().Get("Content-Encoding"); ce != "gzip" {
				t.Fatalf("Content-Encoding %q", ce)
			}
			text := gunzipOneMember(t, zrec.Body.Bytes())
			if got, want := stableLines(text), stableLines([]byte(plain)); got != want || !strings.Contains(got, "joulemark_gpu_power_watts{") {
				t.Fatalf("gzip body differs from the plain one:\n--- gzip\n%s\n--- plain\n%s", got, want)
			}
			for _, id := range st.present {
				if !strings.Contains(plain, `run_id="`+id+`"`) {
					t.Errorf("run %s missing", id)
				}
			}
			for _, id := range st.gone {
				if strings.Contains(plain, `run_id="`+id+`"`) {
					t.Errorf("evicted run %s still served", id)
				}
			}
			if frozen, _ := h.exp.frozenFamilies(); len(frozen) == 0 && len(st.present) > 1 {
				t.Fatal("no frozen families")
			}
			proto, _ := scrape(t, h.exp, map[string]string{"Accept": `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`})
			zfams, _ := scrape(t, h.exp, map[string]string{"Accept-Encoding": "gzip"})
			if got, want := canonical(t, zfams), canonical(t, proto); got != want {
				t.Errorf("gzip series differ from promhttp's:\n--- gzip\n%s\n--- promhttp\n%s", got, want)
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(text)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

// TestRealPrometheusScrapesGzip: a real Prometheus (Debian's 2.42 in CI)
// scrapes /metrics, gzip-compressed, and stores every sample of it.
func TestRealPrometheusScrapesGzip(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 4, Seed: 5, NoiseWatts: 0.5}, Config{MaxRuns: 6})
	for i := range 9 {
		id := fmt.Sprintf("run-%d", i)
		h.post(id, contract.Idle)
		h.step(500 * time.Millisecond)
		h.post(id, contract.Formal)
		h.step(500 * time.Millisecond)
		if i < 8 {
			if _, err := h.client.EndRun(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}
		h.step(200 * time.Millisecond)
	}
	if frozen, _ := h.exp.frozenFamilies(); len(frozen) == 0 {
		t.Fatal("no frozen runs")
	}
	var (
		mu     sync.Mutex
		served []string // Content-Type and Content-Encoding of each scrape
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.exp.Handler().ServeHTTP(w, r)
		mu.Lock()
		served = append(served, w.Header().Get("Content-Type")+" "+w.Header().Get("Content-Encoding"))
		mu.Unlock()
	}))
	defer srv.Close()
	prom := realprom.Start(t, fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: jm\n    static_configs:\n      - targets: [%q]\n",
		strings.TrimPrefix(srv.URL, "http://")))

	query := func(q string) (float64, bool) { return queryValue(t, prom.URL, q, time.Time{}) }
	deadline := time.Now().Add(30 * time.Second)
	for {
		up, ok := query(`up{job="jm"}`)
		if ok && up == 1 {
			break
		}
		if ok && up == 0 || time.Now().After(deadline) {
			t.Fatalf("Prometheus did not scrape the exporter (up=%v, %v)\n%s", up, ok, prom.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// what the exposition holds (now that the scrape-duration histogram has
	// observations): sample lines, and one frozen run's value
	plain := rawScrape(t, h.exp, nil).Body.String()
	samples := 0
	for line := range strings.Lines(plain) {
		if line != "\n" && !strings.HasPrefix(line, "#") {
			samples++
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	var wantEnergy float64
	for _, m := range fams["joulemark_phase_energy_joules"].GetMetric() {
		if labelsMatch(m, map[string]string{"run_id": "run-3", "gpu": "2", "phase": "formal"}) {
			wantEnergy = m.GetGauge().GetValue()
		}
	}
	if wantEnergy == 0 {
		t.Fatal("no formal energy of run-3 on GPU 2 in the exposition")
	}

	// the first scrape had no scrape duration yet: wait for the next one
	for got := 0.0; int(got) != samples; time.Sleep(200 * time.Millisecond) {
		if got, _ = query(`scrape_samples_scraped{job="jm"}`); time.Now().After(deadline) {
			t.Fatalf("Prometheus stored %v samples of a scrape, the exposition has %d", got, samples)
		}
	}
	if got, _ := query(`joulemark_phase_energy_joules{job="jm",run_id="run-3",gpu="2",phase="formal"}`); got != wantEnergy {
		t.Errorf("run-3 formal energy on GPU 2: Prometheus has %v, the exposition %v", got, wantEnergy)
	}
	if got, ok := query(`count(joulemark_phase_energy_joules{job="jm",run_id="run-1"})`); ok {
		t.Errorf("evicted run-1 has %v series in Prometheus", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(served) == 0 || !strings.HasPrefix(served[0], "text/plain") || !strings.HasSuffix(served[0], " gzip") {
		t.Errorf("Prometheus was served %q, want gzip-compressed text", served)
	}
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// TestMetricsScrapesWhileRunsFreeze: plain and gzip scrapes running while
// runs end, freeze and are evicted always decode to a valid exposition in
// which every retained run appears once (run with -race).
func TestMetricsScrapesWhileRunsFreeze(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 2, Seed: 8, NoiseWatts: 0.5}, Config{MaxRuns: 3})
	done := make(chan struct{})
	errs := make(chan error, 4)
	var (
		wg      sync.WaitGroup
		scrapes atomic.Int64
	)
	for _, hdr := range []map[string]string{nil, {"Accept-Encoding": "gzip"}, {"Accept-Encoding": "gzip"}} {
		wg.Go(func() {
			for i := 0; i < 500; i++ {
				select {
				case <-done:
					return
				default:
				}
				rec := httptest.NewRecorder()
				req := httptest.NewRequest("GET", "/metrics", nil)
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				h.exp.Handler().ServeHTTP(rec, req)
				var body io.Reader = rec.Body
				if rec.Header().Get("Content-Encoding") == "gzip" {
					zr, err := gzip.NewReader(rec.Body)
					if err != nil {
						errs <- err
						return
					}
					body = zr
				}
				text, err := io.ReadAll(body)
				if err == nil {
					p := expfmt.NewTextParser(model.UTF8Validation)
					_, err = p.TextToMetricFamilies(bytes.NewReader(text))
				}
				if err != nil {
					errs <- fmt.Errorf("scrape %v: %w", hdr, err)
					return
				}
				scrapes.Add(1)
			}
		})
	}
	for i := range 8 {
		id := fmt.Sprintf("c-%d", i)
		h.post(id, contract.Idle)
		h.step(300 * time.Millisecond)
		if _, err := h.client.EndRun(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		h.step(300 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if scrapes.Load() < 3 {
		t.Errorf("%d scrapes during the churn", scrapes.Load())
	}
	// and after the churn, gzip still matches plain
	plain := rawScrape(t, h.exp, nil).Body.String()
	text := gunzipOneMember(t, rawScrape(t, h.exp, map[string]string{"Accept-Encoding": "gzip"}).Body.Bytes())
	if stableLines(text) != stableLines([]byte(plain)) {
		t.Error("gzip body differs from the plain one after the churn")
	}
	for _, id := range []string{"c-5", "c-6", "c-7"} {
		if n := strings.Count(plain, `joulemark_run_idle_stable{run_id="`+id+`"}`); n != 1 {
			t.Errorf("run %s: %d idle_stable series", id, n)
		}
	}
}

// TestFinishedRunLeavesMetricsAfterTTL: a finished run stays on /metrics,
// in every format, until RunMetricsTTL after its final values are known
// (it froze), then leaves it; the API serves it until MaxRuns evicts it.
func TestFinishedRunLeavesMetricsAfterTTL(t *testing.T) {
	const ttl = 10 * time.Second
	h := newHarness(t, gpu.SimConfig{GPUs: 2, Seed: 9, NoiseWatts: 0.5}, Config{MaxRuns: 2, RunMetricsTTL: ttl})
	finish := func(id string) {
		h.post(id, contract.Idle)
		h.step(time.Second)
		if _, err := h.client.EndRun(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		h.step(200 * time.Millisecond)
	}
	// served reports whether the run's series are on /metrics, as text
	// and as protobuf (which must agree).
	served := func(id string) bool {
		t.Helper()
		text, _ := scrape(t, h.exp, nil)
		proto, _ := scrape(t, h.exp, map[string]string{"Accept": `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`})
		sel := `run_id="` + id + `"`
		inText, inProto := strings.Contains(canonical(t, text), sel), strings.Contains(canonical(t, proto), sel)
		if inText != inProto {
			t.Fatalf("run %s: on text /metrics %v, on protobuf %v", id, inText, inProto)
		}
		return inText
	}
	finish("old")
	h.exp.mu.RLock()
	fr := h.exp.lc.runs["old"].frozen
	h.exp.mu.RUnlock()
	if fr == nil {
		t.Fatal("the finished run did not freeze")
	}
	h.post("live", contract.Idle)
	// up to the last sample before the TTL: on /metrics
	iv := h.exp.cfg.Interval
	h.step(time.Duration(fr.at+int64(ttl)-h.exp.off(h.clk.Now())) - iv)
	if !served("old") {
		t.Fatalf("run left /metrics %v after it froze, before its TTL %v", time.Duration(h.exp.off(h.clk.Now())-fr.at), ttl)
	}
	// the sample at the TTL takes it off /metrics, not off the API
	h.step(iv)
	if served("old") {
		t.Errorf("run still on /metrics %v after it froze (TTL %v)", time.Duration(h.exp.off(h.clk.Now())-fr.at), ttl)
	}
	if !served("live") {
		t.Error("the active run left /metrics")
	}
	if st, ok := h.exp.RunStatus("old"); !ok || len(st.Phases) == 0 {
		t.Errorf("API after the TTL: %v %+v, want the run", ok, st)
	}
	// two more finished runs: MaxRuns 2 evicts it from the API too
	finish("b")
	finish("c")
	if _, ok := h.exp.RunStatus("old"); ok {
		t.Error("run still in the API after eviction")
	}
	if !served("b") || !served("c") {
		t.Error("newly finished runs not on /metrics")
	}
}

// TestFinishedRunKeptWithoutTTL: with RunMetricsTTL 0 a finished run stays
// on /metrics until MaxRuns evicts it (as the API serves it), however long
// that takes.
func TestFinishedRunKeptWithoutTTL(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 9}, Config{MaxRuns: 2})
	h.exp.cfg.RunMetricsTTL = 0 // newExp takes the default for 0
	served := func(id string) bool {
		text, _ := scrape(t, h.exp, nil)
		return strings.Contains(canonical(t, text), `run_id="`+id+`"`)
	}
	for _, id := range []string{"old", "b", "c"} {
		h.post(id, contract.Idle)
		h.step(time.Second)
		if _, err := h.client.EndRun(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		h.step(200 * time.Millisecond)
		if id == "old" {
			h.step(Defaults().RunMetricsTTL + time.Minute)
			if !served("old") {
				t.Fatal("finished run left /metrics with RunMetricsTTL 0")
			}
		}
	}
	if served("old") || !served("b") || !served("c") {
		t.Errorf("after eviction: old %v b %v c %v, want only b and c on /metrics", served("old"), served("b"), served("c"))
	}
}
