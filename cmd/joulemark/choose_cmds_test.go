package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixture(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "runset", "testdata"}, parts...)...)
}

// The regression gate's exit status comes from Run's error (main exits 1).
func TestDiffCmdGate(t *testing.T) {
	tests := []struct {
		after     string
		threshold float64
		wantErr   string
	}{
		{"after-ok.json", 5, ""},
		{"after-bad.json", 5, "4 regression(s)"},
		{"after-bad.json", 200, "1 regression(s)"}, // error rate +100% is under 200%: only the vanished goodput
		{"after-invalid.json", 5, "1 regression(s)"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		c := &DiffCmd{Before: fixture("diff", "before.json"), After: fixture("diff", tc.after), FailOnRegression: tc.threshold, output: output{&buf}}
		err := c.Run(&Globals{})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.after, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s at %v%%: error %v, want %q", tc.after, tc.threshold, err, tc.wantErr)
		}
		if !strings.Contains(buf.String(), "steady_state.joules_per_token") {
			t.Errorf("%s: table not printed:\n%s", tc.after, buf.String())
		}
	}
}

func TestDiffCmdOutputSanity(t *testing.T) {
	limit := 0.1
	var buf bytes.Buffer
	c := &DiffCmd{Before: fixture("runs", "vllm-tp1", "report.json"), After: fixture("runs", "vllm-tp2", "report.json"),
		FailOnRegression: 100, MaxBadOutputRatio: &limit, output: output{&buf}}
	if err := c.Run(&Globals{}); err == nil || !strings.Contains(buf.String(), "REGRESSED: AFTER outputs: bad outputs 0.2 > 0.1") {
		t.Errorf("err %v, output:\n%s", err, buf.String())
	}
}

func TestPlanCmdWritesOnce(t *testing.T) {
	matches, _ := filepath.Glob(fixture("sweep", "*", "report.json"))
	out := filepath.Join(t.TempDir(), "plan.json")
	ttft := 500 * time.Millisecond
	c := &PlanCmd{Reports: matches, TargetPeakRate: 100, SLOTTFTP95: &ttft, RestartsPerDay: 1, Out: out, Format: "text", output: output{&bytes.Buffer{}}}
	if err := c.Run(&Globals{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(data, []byte(`"replicas": 22`)) {
		t.Fatalf("plan.json: %v\n%s", err, data)
	}
	if err := c.Run(&Globals{}); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second run: %v", err)
	}
}

func TestRecommendCmdNoSurvivor(t *testing.T) {
	matches, _ := filepath.Glob(fixture("runs", "*", "report.json"))
	limit := 0.1
	var buf bytes.Buffer
	c := &RecommendCmd{Reports: matches, MaxJoulesPerToken: &limit, Prefer: "steady_state.joules_per_token", output: output{&buf}}
	if err := c.Run(&Globals{}); err == nil || !strings.Contains(err.Error(), "no run meets every constraint") {
		t.Errorf("err = %v", err)
	}
	if got := strings.Count(buf.String(), "(--max-joules-per-token)"); got != 4 {
		t.Errorf("%d runs excluded by the constraint, want 4 (the fifth is invalid):\n%s", got, buf.String())
	}
}

// --max-gpu-memory takes a size with a unit and drops the runs whose
// largest single-GPU memory peak is above it.
func TestRecommendCmdMaxGPUMemory(t *testing.T) {
	var reports []string
	for _, n := range []string{"sweep-c4", "sweep-c12", "sweep-c24", "sweep-c12-qwen"} {
		reports = append(reports, filepath.Join("..", "..", "runset", "compare", "testdata", "reports", n+".json"))
	}
	cli := parseCLI(t, append([]string{"recommend", "--max-gpu-memory", "60GiB"}, reports...)...)
	var buf bytes.Buffer
	cli.Recommend.stdout = &buf
	if err := cli.Recommend.Run(&Globals{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"gpu_memory.max_gpu_peak_bytes 70 GiB > 60 GiB (--max-gpu-memory)",
		"gpu_memory.max_gpu_peak_bytes 62 GiB > 60 GiB (--max-gpu-memory)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "(--max-gpu-memory)"); got != 2 {
		t.Errorf("%d runs dropped by --max-gpu-memory, want 2:\n%s", got, out)
	}
}

// --min-quality drops a fast run whose answers are wrong.
func TestRecommendCmdMinQuality(t *testing.T) {
	var reports []string
	for _, n := range []string{"sweep-c12", "sweep-c12-qwen"} {
		reports = append(reports, filepath.Join("..", "..", "runset", "compare", "testdata", "reports", n+".json"))
	}
	cli := parseCLI(t, append([]string{"recommend", "--min-quality", "0.9"}, reports...)...)
	var buf bytes.Buffer
	cli.Recommend.stdout = &buf
	if err := cli.Recommend.Run(&Globals{}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "quality.pass_rate 0.62 < 0.9 (--min-quality)") || strings.Count(out, "(--min-quality)") != 1 {
		t.Errorf("want only the qwen run (pass rate 0.62, the lower J/token) dropped:\n%s", out)
	}
}

// plan refuses a "sweep" whose runs are different models, unless --pool.
func TestPlanCmdRefusesMixedConfigurations(t *testing.T) {
	var reports []string
	for _, n := range []string{"sweep-c4", "sweep-c12", "sweep-c12-qwen"} {
		reports = append(reports, filepath.Join("..", "..", "runset", "compare", "testdata", "reports", n+".json"))
	}
	args := append([]string{"plan", "--target-peak-rate", "10", "--slo.ttft-p95", "500ms"}, reports...)
	cli := parseCLI(t, args...)
	cli.Plan.stdout = &bytes.Buffer{}
	if err := cli.Plan.Run(&Globals{}); err == nil || !strings.Contains(err.Error(), "run.model (llama-3.1-8b, qwen2.5-7b)") {
		t.Errorf("mixed models: %v, want a refusal naming run.model", err)
	}
	cli = parseCLI(t, append(args, "--pool")...)
	cli.Plan.stdout = &bytes.Buffer{}
	if err := cli.Plan.Run(&Globals{}); err != nil && strings.Contains(err.Error(), "run.model") {
		t.Errorf("--pool: %v", err)
	}
	cli = parseCLI(t, append([]string{"plan", "--target-peak-rate", "10", "--slo.ttft-p95", "500ms"}, reports[:2]...)...)
	cli.Plan.stdout = &bytes.Buffer{}
	if err := cli.Plan.Run(&Globals{}); err != nil {
		t.Errorf("one configuration at two loads: %v", err)
	}
}

// recommend --group-by prints text only: another format is bad usage,
// refused before any report is read.
func TestRecommendGroupByTextOnly(t *testing.T) {
	cli := parseCLI(t, "recommend", "--group-by", "run.model", "--format", "json", "no-such-report.json")
	cli.Recommend.stdout = &bytes.Buffer{}
	err := cli.Recommend.Run(&Globals{})
	if err == nil || !strings.Contains(err.Error(), "use --format text") || exitCode(err) != exitUsage {
		t.Errorf("err = %v", err)
	}
}
