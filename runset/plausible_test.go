package runset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editedReport is testdata's vllm-tp1 report with key (dotted) set to v,
// written into dir.
func editedReport(t testing.TB, dir, key string, v any) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "runs", "vllm-tp1", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	m, parts := doc, strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	m[parts[len(parts)-1]] = v
	out, _ := json.Marshal(doc)
	p := filepath.Join(dir, "report.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImpossibleReportsRefused: the run-set commands refuse a report whose
// tracked figures cannot be (a negative, zero or 1e308 J/token, a ratio
// above 1) or whose run_id has path components, naming the report and the
// key; the unedited report loads.
func TestImpossibleReportsRefused(t *testing.T) {
	for _, tc := range []struct {
		key  string
		v    any
		want string
	}{
		{"steady_state.joules_per_token", -5.0, "steady_state.joules_per_token -5 is impossible"},
		{"steady_state.joules_per_token", 0.0, "steady_state.joules_per_token 0 is impossible"},
		{"steady_state.joules_per_token", 1e308, "steady_state.joules_per_token 1e+308 is impossible"},
		{"full_lifecycle_joules_per_token", -1.0, "full_lifecycle_joules_per_token -1"},
		{"throughput_tokens_per_second", -3.0, "throughput_tokens_per_second -3"},
		{"goodput.ratio", 1.5, "goodput.ratio 1.5"},
		{"latency.ttft_seconds.p95", -0.1, "latency.ttft_seconds.p95 -0.1"},
		{"run_id", "../../etc/passwd", "run_id"},
	} {
		p := editedReport(t, t.TempDir(), tc.key, tc.v)
		_, err := loadReports([]string{p}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s = %v: got %v, want an error naming %s and %q", tc.key, tc.v, err, p, tc.want)
		}
	}
	if _, err := loadReports([]string{editedReport(t, t.TempDir(), "steady_state.joules_per_token", 0.5)}, LoadOptions{}); err != nil {
		t.Errorf("a plausible report refused: %v", err)
	}
}

// FuzzRunSetReport: whatever a report.json holds, loading it for the
// run-set commands either fails with an error naming the file or yields
// figures within their bounds; it never panics.
func FuzzRunSetReport(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "runs", "vllm-tp1", "report.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(strings.Replace(string(seed), `"joules_per_token": `, `"joules_per_token": -`, 1)))
	f.Add([]byte(strings.Replace(string(seed), `"run_id": "vllm-tp1"`, `"run_id": "../x"`, 1)))
	f.Add([]byte(`{"run_id": "a", "valid": true, "steady_state": {"reached": true, "joules_per_token": 1e999}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := LoadReport(p, LoadOptions{})
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the report", err)
			}
			return
		}
		for _, m := range CheckedMetrics {
			if err := m.Check(&r.Report); err != nil {
				t.Errorf("loaded report holds %v", err)
			}
		}
	})
}
