package analyze

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/report"
)

// qualityArchive writes an archive whose formal answers pass or fail as
// given (warm-up and failed requests carry verdicts that must not count).
func qualityArchive(t *testing.T, verdicts []string) *BenchArchive {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"phase":"warmup","success":true,"quality":{"pass":false,"failed_rules":["regex"]}}` + "\n")
	b.WriteString(`{"phase":"formal","success":false,"quality":{"pass":false,"failed_rules":["regex"]}}` + "\n")
	b.WriteString(`{"phase":"formal","success":true}` + "\n") // not checked
	for _, v := range verdicts {
		fmt.Fprintf(&b, `{"phase":"formal","success":true,"quality":%s}`+"\n", v)
	}
	os.WriteFile(filepath.Join(dir, runarchive.RequestsFile), []byte(b.String()), 0o644)
	os.WriteFile(filepath.Join(dir, runarchive.ManifestFile), []byte(`{"run_id":"fixture-1","config":{"workload":{"kind":"correctness"}}}`), 0o644)
	run, err := runarchive.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := readBenchArchive(run, "fixture-1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// addQualityOf adds the quality of a, as analyze does.
func addQualityOf(r *report.Report, a *BenchArchive, minPassRate float64) {
	addQuality(r, a.quality, a.manifest, minPassRate)
}

const (
	pass     = `{"pass":true}`
	mismatch = `{"pass":false,"failed_rules":["correctness"],"mismatches":1}`
)

func TestQualityBelowThresholdExcludes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verdicts []string
		valid    bool
	}{
		{"all good", []string{pass, pass, pass, pass}, true},
		{"one of twenty wrong", append(repeat(pass, 19), mismatch), true}, // 95 % meets 0.95
		{"degraded", []string{pass, mismatch, mismatch, pass}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := fixtureReport(t)
			addQualityOf(r, qualityArchive(t, tc.verdicts), 0.95)
			q := r.Quality
			if q == nil || q.Requests != len(tc.verdicts) || q.Workload != "correctness" {
				t.Fatalf("quality %+v, want %d checked formal answers of the correctness workload", q, len(tc.verdicts))
			}
			flagged := false
			for _, f := range r.Flags {
				flagged = flagged || f.Code == contract.FlagQualityLow && f.Excluding
			}
			if r.Valid != tc.valid || flagged == tc.valid {
				t.Errorf("valid %v flagged %v, want valid %v (pass rate %v)", r.Valid, flagged, tc.valid, *q.PassRate)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestGoldenQualitySection(t *testing.T) {
	r, _ := fixtureReport(t)
	addQualityOf(r, qualityArchive(t, []string{pass, mismatch, `{"pass":false,"failed_rules":["regex","forbidden"]}`, pass}), 0.95)
	js, err := report.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(js, []byte(`"quality"`))
	j := bytes.Index(js[i:], []byte("\n  },"))
	golden.Compare(t, "quality.section.json", js[i:i+j+4])
	s := md.String()
	k := strings.Index(s, "## Answer quality")
	golden.Compare(t, "quality.section.md", []byte(s[k:k+strings.Index(s[k+3:], "## ")+3]))
}
