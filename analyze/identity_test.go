package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

func TestArchiveRunInfoFallback(t *testing.T) {
	dir := t.TempDir()
	doc := `{"run_id":"r1","run_info":{"run_id":"r1","model":"m","engine":"sglang","gpus":8,"gpu_name":"NVIDIA H200","load_mode":"poisson","rate":2.5,"dataset_sha256":"ab","repetition_group":"g","repetition":2,"repetitions":3}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	arch, err := runarchive.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := arch.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	info := m.RunInfo
	if info == nil || info.Model != "m" || info.GPUs != 8 || info.Rate != 2.5 || info.Load() != "rate 2.5 req/s (poisson)" {
		t.Fatalf("run info %+v, %v", info, err)
	}
	line := identityLine(&report.RunIdentity{RunIdentity: *info, Source: "archive"})
	for _, want := range []string{"`m`", "sglang", "8 × NVIDIA H200", "rate 2.5 req/s (poisson)", "repetition 2 of 3 in group `g`", "from archive"} {
		if !strings.Contains(line, want) {
			t.Errorf("identity line %q lacks %q", line, want)
		}
	}
}

// TestIdentityFromEngineStaysText: a model id and GPU name with HTML and
// backticks (both come from parties joulemark does not control) render as
// text in report.md and report.html, never as markup.
func TestIdentityFromEngineStaysText(t *testing.T) {
	r, _ := fixtureReport(t)
	r.Run = &report.RunIdentity{Source: "archive"}
	r.Run.Model = "m` <img src=x onerror=alert(1)> ``"
	r.Run.Engine = "vllm"
	r.Run.GPUs, r.Run.GPUName = 1, "<b>H200</b> | x"
	var md, html strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	// In report.md the model id stands in a code span (literal text) and
	// the GPU name is escaped; report.html renders neither as markup.
	if strings.Contains(md.String(), "<b>H200") {
		t.Errorf("report.md holds the GPU name's HTML unescaped")
	}
	for _, bad := range []string{"<img", "<b>H200"} {
		if strings.Contains(html.String(), bad) {
			t.Errorf("report.html holds %q as markup", bad)
		}
	}
	if !strings.Contains(md.String(), "``` m` <img src=x onerror=alert(1)> `` ```") {
		t.Errorf("report.md does not keep the model id whole in one code span:\n%s", md.String()[:min(md.Len(), 600)])
	}
}
