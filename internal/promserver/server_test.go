package promserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/promwait"
)

// startServer starts a server on a fresh directory (unless opts.Dir is set)
// and closes it at the end of the test.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "tsdb")
	}
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func promAPI(t *testing.T, s *Server) v1.API {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c)
}

func postWrite(t *testing.T, url string, samples []remotewrite.Sample) {
	t.Helper()
	body, err := remotewrite.Encode(samples)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		t.Fatalf("remote write answered %d: %s", resp.StatusCode, msg.String())
	}
}

// requestSamples are per-request samples for one slot, one per second
// from first over n seconds.
func requestSamples(slot string, first time.Time, n int) []remotewrite.Sample {
	var out []remotewrite.Sample
	for i := range n {
		out = append(out, remotewrite.Sample{
			Labels: map[string]string{
				"__name__": "joulemark_request_output_tokens", "run_id": "r1", "phase": "formal", "slot": slot,
			},
			Value:       float64(100 + i),
			TimestampMs: first.Add(time.Duration(i) * time.Second).UnixMilli(),
		})
	}
	return out
}

func TestRemoteWriteOutOfOrderAndQueryAPI(t *testing.T) {
	s := startServer(t, Options{})
	now := time.Now().Truncate(time.Second)
	recent := now.Add(-5 * time.Minute)
	older := now.Add(-40 * time.Minute) // written after newer samples of the same series

	// Newer samples first, then older ones of the same series: out of order.
	postWrite(t, s.RemoteWriteURL(), requestSamples("0", recent, 60))
	postWrite(t, s.RemoteWriteURL(), requestSamples("0", older, 60))
	// And through joulemark's own writer.
	w, err := remotewrite.New(remotewrite.Config{URL: s.RemoteWriteURL(), FlushInterval: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range requestSamples("1", older, 30) {
		w.Append(smp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st, err := w.Close(ctx); err != nil || st.Acknowledged != 30 {
		t.Fatalf("writer: stats %+v, err %v", st, err)
	}

	p := promAPI(t, s)
	tests := []struct {
		name  string
		query string
		at    time.Time
		want  string
	}{
		{"count over the recent range", `count_over_time(joulemark_request_output_tokens{slot="0"}[2m])`, recent.Add(59 * time.Second), "60"},
		{"count over the older range", `count_over_time(joulemark_request_output_tokens{slot="0"}[2m])`, older.Add(59 * time.Second), "60"},
		{"older sample value", `joulemark_request_output_tokens{slot="0"} @ ` + fmt.Sprint(older.Add(10*time.Second).Unix()), now, "110"},
		{"second slot via writer", `sum_over_time(joulemark_request_output_tokens{slot="1"}[1m])`, older.Add(29 * time.Second), fmt.Sprint(30*100 + 29*30/2)},
		{"series count", `count(count by (slot) (count_over_time(joulemark_request_output_tokens[1h])))`, now, "2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, warn, _, err := p.Query(ctx, tc.query, tc.at)
			if err != nil {
				t.Fatalf("query %s: %v", tc.query, err)
			}
			if len(warn) > 0 {
				t.Errorf("warnings: %v", warn)
			}
			vec, ok := v.(model.Vector)
			if !ok || len(vec) != 1 {
				t.Fatalf("query %s: want one sample, got %v", tc.query, v)
			}
			if got := vec[0].Value.String(); got != tc.want {
				t.Errorf("query %s = %s, want %s", tc.query, got, tc.want)
			}
		})
	}

	t.Run("query_range", func(t *testing.T) {
		r := v1.Range{Start: older, End: older.Add(59 * time.Second), Step: 10 * time.Second}
		v, _, _, err := p.QueryRange(ctx, `joulemark_request_output_tokens{slot="0"}`, r)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := v.(model.Matrix)
		if !ok || len(m) != 1 {
			t.Fatalf("want one series, got %v", v)
		}
		var got []string
		for _, sp := range m[0].Values {
			got = append(got, sp.Value.String())
		}
		if want := "100 110 120 130 140 150"; strings.Join(got, " ") != want {
			t.Errorf("values %v, want %s", got, want)
		}
	})
	t.Run("series", func(t *testing.T) {
		sets, _, _, err := p.Series(ctx, []string{`joulemark_request_output_tokens`}, now.Add(-time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		var slots []string
		for _, ls := range sets {
			slots = append(slots, string(ls["slot"]))
		}
		sort.Strings(slots)
		if strings.Join(slots, ",") != "0,1" {
			t.Errorf("series slots %v, want 0,1", slots)
		}
	})
	t.Run("labels", func(t *testing.T) {
		names, _, _, err := p.LabelNames(ctx, nil, now.Add(-time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range names {
			got = append(got, string(n))
		}
		if want := "__name__,phase,run_id,slot"; strings.Join(got, ",") != want {
			t.Errorf("label names %v, want %s", names, want)
		}
		vals, _, _, err := p.LabelValues(ctx, "run_id", nil, now.Add(-time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != 1 || string(vals[0]) != "r1" {
			t.Errorf("run_id values %v, want [r1]", vals)
		}
	})
	t.Run("self metrics", func(t *testing.T) {
		resp, err := http.Get(s.URL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		// The 60 older samples of slot 0 came after newer ones of their series.
		const want = `prometheus_tsdb_head_out_of_order_samples_appended_total{type="float"} 60`
		if !strings.Contains(b.String(), want+"\n") {
			var got []string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, "prometheus_tsdb_head_out_of_order_samples_appended_total") {
					got = append(got, l)
				}
			}
			t.Errorf("/metrics: %q, want %s", got, want)
		}
	})
	t.Run("buildinfo", func(t *testing.T) {
		bi, err := p.Buildinfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(bi.Version, "3.") {
			t.Errorf("build version %q, want a Prometheus 3.x release", bi.Version)
		}
	})
}

func TestRemoteWriteTooOldIsRejected(t *testing.T) {
	s := startServer(t, Options{OutOfOrderWindow: 10 * time.Minute})
	now := time.Now()
	postWrite(t, s.RemoteWriteURL(), requestSamples("0", now, 1))
	body, err := remotewrite.Encode(requestSamples("0", now.Add(-2*time.Hour), 1))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.RemoteWriteURL(), bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("sample 2h behind a 10m window: status %d, want 400", resp.StatusCode)
	}
}

func TestRemoteWriteDisabled(t *testing.T) {
	s := startServer(t, Options{DisableRemoteWrite: true})
	body, _ := remotewrite.Encode(requestSamples("0", time.Now(), 1))
	resp, err := http.Post(s.RemoteWriteURL(), "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		t.Errorf("remote write with the receiver disabled: status %d, want an error", resp.StatusCode)
	}
}

func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulemark_gpu_power_watts", Help: "test"})
	g.Set(123.5)
	reg.MustRegister(g)
	target := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer target.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer down.Close()

	s := startServer(t, Options{ScrapeTargets: []Target{
		{Job: "exporter", URL: target.URL + "/metrics", Interval: 100 * time.Millisecond},
		{Job: "broken", URL: down.URL + "/metrics", Interval: 100 * time.Millisecond},
	}})
	p := promAPI(t, s)
	tests := []struct{ query, want string }{
		{`up{job="exporter"}`, "1"},
		{`joulemark_gpu_power_watts{job="exporter"}`, "123.5"},
		{`up{job="broken"}`, "0"},
		{`count(count_over_time(up{job="exporter"}[1m]) >= 3)`, "1"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) { promwait.Value(t, p, tc.query, tc.want, 10*time.Second) })
	}
	t.Run("targets", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tr, err := p.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Active) != 2 {
			t.Errorf("active targets %d, want 2", len(tr.Active))
		}
	})
}

func TestRecordingRule(t *testing.T) {
	const ruleYAML = `groups:
- name: test
  rules:
  - record: joulemark:gpu_power_watts:sum
    expr: sum(joulemark_gpu_power_watts)
`
	file := filepath.Join(t.TempDir(), "file.yml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(ruleYAML, "joulemark:gpu_power_watts:sum", "joulemark:gpu_power_watts:max")), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Options{
		EvaluationInterval: 100 * time.Millisecond,
		RuleSources:        []RuleSource{{Name: "embedded/test.yml", YAML: []byte(ruleYAML)}},
		RuleFiles:          []string{file},
	})
	now := time.Now()
	var samples []remotewrite.Sample
	for gpu := range 4 {
		for i := range 600 { // 10 minutes, so the lookback always finds one
			samples = append(samples, remotewrite.Sample{
				Labels:      map[string]string{"__name__": "joulemark_gpu_power_watts", "gpu": fmt.Sprint(gpu)},
				Value:       100 + float64(gpu),
				TimestampMs: now.Add(time.Duration(i) * time.Second).UnixMilli(),
			})
		}
	}
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	p := promAPI(t, s)
	// 100+101+102+103; the rule file from disk records the same expression.
	promwait.Value(t, p, `joulemark:gpu_power_watts:sum`, "406", 10*time.Second)
	promwait.Value(t, p, `joulemark:gpu_power_watts:max`, "406", 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rr, err := p.Rules(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Groups) != 2 {
		t.Errorf("rule groups %d, want 2", len(rr.Groups))
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tsdb")
	first := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()

	s, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendSamples(ctx, requestSamples("7", first, 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, Options{Dir: dir, DisableRemoteWrite: true})
	v, _, _, err := promAPI(t, s).Query(ctx, `sum_over_time(joulemark_request_output_tokens{slot="7"}[10m])`, first.Add(99*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.String(), fmt.Sprint(100*100+99*100/2); !strings.Contains(got, "=> "+want+" @") {
		t.Errorf("after reopening: %s, want %s", got, want)
	}
}

func TestAppendSamplesErrors(t *testing.T) {
	s := startServer(t, Options{OutOfOrderWindow: time.Minute})
	now := time.Now()
	if err := s.AppendSamples(context.Background(), []remotewrite.Sample{{Labels: map[string]string{"gpu": "0"}, TimestampMs: now.UnixMilli()}}); err == nil || !strings.Contains(err.Error(), "no __name__") {
		t.Errorf("sample without a name: err %v", err)
	}
	if err := s.AppendSamples(context.Background(), requestSamples("0", now, 1)); err != nil {
		t.Fatal(err)
	}
	err := s.AppendSamples(context.Background(), requestSamples("0", now.Add(-3*time.Hour), 1))
	if err == nil || !strings.Contains(err.Error(), "joulemark_request_output_tokens") {
		t.Errorf("sample 3h behind a 1m window: err %v", err)
	}
}

func TestStartCancelledContextCloses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := http.Get(s.URL() + "/-/ready"); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := http.Get(s.URL() + "/-/ready"); err == nil {
		t.Error("server still answers after its context was cancelled")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	dir := t.TempDir()
	badRules := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(badRules, []byte("groups:\n- name: g\n  rules:\n  - record: x\n    expr: sum(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"no dir", Options{}, []string{"data directory (Dir) is required"}},
		{"negative durations", Options{Dir: dir, OutOfOrderWindow: -time.Second, Retention: -time.Hour},
			[]string{"out-of-order window -1s: must not be negative", "retention -1h0m0s: must not be negative"}},
		{"bad listen address", Options{Dir: dir, ListenAddress: "nonsense"}, []string{`listen address "nonsense"`}},
		{"bad target URL", Options{Dir: dir, ScrapeTargets: []Target{{Job: "a", URL: "ftp://x/metrics"}, {Job: "b", URL: "http:///metrics"}}},
			[]string{`scrape target 0 (job "a"): URL "ftp://x/metrics": scheme must be http or https`, `scrape target 1 (job "b")`, "no host"}},
		{"duplicate job", Options{Dir: dir, ScrapeTargets: []Target{{Job: "a", URL: "http://x"}, {Job: "a", URL: "http://y"}}},
			[]string{`scrape target 1 (job "a"): duplicate job`}},
		{"empty job", Options{Dir: dir, ScrapeTargets: []Target{{URL: "http://x"}}}, []string{"empty job"}},
		{"sub-millisecond interval", Options{Dir: dir, ScrapeTargets: []Target{{Job: "a", URL: "http://x", Interval: 1500 * time.Microsecond}}},
			[]string{"whole number of milliseconds"}},
		{"bad rule expression", Options{Dir: dir, RuleFiles: []string{badRules}}, []string{badRules}},
		{"missing rule file", Options{Dir: dir, RuleFiles: []string{filepath.Join(dir, "missing.yml")}}, []string{"missing.yml", "no such file"}},
		{"bad rule source", Options{Dir: dir, RuleSources: []RuleSource{{Name: "embedded.yml", YAML: []byte("groups: [{name: g, rules: [{record: 'x', expr: 'rate(a[5m]'}]}]")}}},
			[]string{"embedded.yml"}},
		{"unknown rule field", Options{Dir: dir, RuleSources: []RuleSource{{Name: "e.yml", YAML: []byte("groups: [{name: g, rulez: []}]")}}},
			[]string{"e.yml", "rulez"}},
		{"duplicate rule source", Options{Dir: dir, RuleSources: []RuleSource{{Name: "a"}, {Name: "a"}}}, []string{`duplicate name "a"`}},
		{"data dir is a file", Options{Dir: notDir}, []string{"data directory", notDir}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.opts)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestCheckDataDir(t *testing.T) {
	root := t.TempDir()
	used := filepath.Join(root, "used")
	s, err := Start(context.Background(), Options{Dir: used})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want string // "" = no error
	}{
		{used, ""},
		{empty, "no TSDB there"},
		{file, "not a directory"},
		{filepath.Join(root, "missing"), "no such file"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			err := CheckDataDir(tc.dir)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckDataDir: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckDataDir: err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestDirInUse(t *testing.T) {
	s := startServer(t, Options{})
	_, err := Start(context.Background(), Options{Dir: s.opts.Dir})
	if err == nil || !strings.Contains(err.Error(), s.opts.Dir) {
		t.Errorf("second server on the same directory: err %v, want one naming the directory", err)
	}
}

func TestListenFailureReleasesDir(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "tsdb")
	_, err = Start(context.Background(), Options{Dir: dir, ListenAddress: busy.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "listen on "+busy.Addr().String()) {
		t.Fatalf("Start on a busy port: err %v", err)
	}
	// The failed Start closed the TSDB: the directory can be opened again.
	startServer(t, Options{Dir: dir})
}
