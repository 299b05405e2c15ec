package benchjob

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/benchjob/quality"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestCorrectnessWorkload runs --workload.kind=correctness against a fake
// engine that answers every other prompt wrong: those requests, and only
// those, carry a mismatch.
func TestCorrectnessWorkload(t *testing.T) {
	const seed = 7
	expect := map[string]string{}
	for i := range 64 {
		text, c := quality.CorrectnessPrompt(seed, i)
		expect[text] = c.Expect
	}
	wrong := map[string]bool{} // a degraded model: off by one on odd numbers
	for text, want := range expect {
		n, _ := strconv.Atoi(want)
		wrong[text] = n%2 == 1
	}
	srv := openaitest.New(openaitest.Behavior{Model: "test-model", Answer: func(prompt string) string {
		want, ok := expect[prompt]
		if !ok {
			return "unknown prompt"
		}
		n, _ := strconv.Atoi(want)
		if wrong[prompt] {
			return "The number is " + strconv.Itoa(n+1) + "."
		}
		return "The number is " + want + "."
	}})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests, cfg.WarmupRequests = 20, 0
	cfg.Workload = Workload{Kind: contract.WorkloadCorrectness, Seed: seed, MeanOutputTokens: 16}
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	var s runarchive.QualitySummary
	for _, r := range recs {
		if r.Quality == nil {
			t.Fatalf("record %d has no quality verdict", r.Index)
		}
		text, c := quality.CorrectnessPrompt(seed, r.Index)
		if want := wrong[text]; r.Quality.Pass == want || (r.Quality.Mismatches == 1) != want {
			t.Errorf("prompt %d (expects %s): %+v, answered wrong %v", r.Index, c.Expect, r.Quality, want)
		}
		s.Add(*r.Quality)
	}
	if s.Requests != 20 || s.Mismatches == 0 || s.Passed == 0 {
		t.Errorf("summary %+v: want both good and bad answers among 20", s)
	}
}

// TestQualityFileRubric checks a dataset's answers against a quality_file:
// prompt 0 must name Paris, prompt 1 must be digits, none may apologise.
func TestQualityFileRubric(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds.jsonl")
	os.WriteFile(ds, []byte(`{"prompt": "capital of France?", "max_tokens": 8}
{"prompt": "two plus two?", "max_tokens": 8}
{"prompt": "say hello", "max_tokens": 8}
`), 0o644)
	qf := filepath.Join(dir, "quality.yaml")
	os.WriteFile(qf, []byte(`all:
  forbidden: ["Sorry"]
prompts:
  - index: 0
    contains_all: [Paris]
  - index: 1
    regex: '^\d+$'
`), 0o644)
	answers := map[string]string{"capital of France?": "Lyon", "two plus two?": "4", "say hello": "Sorry, hello"}
	srv := openaitest.New(openaitest.Behavior{Model: "test-model", Answer: func(p string) string { return answers[p] }})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests, cfg.WarmupRequests = 6, 0
	cfg.Workload = Workload{Dataset: ds, QualityFile: qf, MeanOutputTokens: 8}
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	want := map[int]string{0: "contains_all", 1: "", 2: "forbidden"}
	for _, r := range recs {
		if r.Quality == nil {
			t.Fatalf("record %d not checked", r.Index)
		}
		if got := strings.Join(r.Quality.Failed, ","); got != want[r.Index%3] || r.Quality.Pass != (got == "") {
			t.Errorf("prompt %d: %+v, want failed %q", r.Index, r.Quality, want[r.Index%3])
		}
	}
	if len(recs) != 6 {
		t.Errorf("%d records, want 6", len(recs))
	}
}
