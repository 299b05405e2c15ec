package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/report"
)

func iptr(v int) *int   { return &v }
func bptr(v bool) *bool { return &v }

func TestAddOutputSanity(t *testing.T) {
	tests := []struct {
		name     string
		counts   report.OutputCounts
		max      float64
		wantFlag string // "" for no flag
		wantCell string
	}{
		{"clean", report.OutputCounts{Requests: 100, Repeated: iptr(0), Short: iptr(0), IgnoreEOS: bptr(true)}, 0.05, "",
			"0 / 0 / 0 of 100 (0.00% bad)"},
		{"at the threshold", report.OutputCounts{Requests: 100, Empty: 2, Repeated: iptr(2), Short: iptr(1)}, 0.05, "",
			"2 / 2 / 1 of 100 (5.00% bad)"},
		{"above the threshold", report.OutputCounts{Requests: 100, Empty: 2, Repeated: iptr(3), Short: iptr(1)}, 0.05,
			"6 of 100 successful formal outputs (6.00%) are suspect (2 empty, 3 repeated, 1 short), above the 5% threshold",
			"2 / 3 / 1 of 100 (6.00% bad)"},
		{"cut outputs without ignore_eos", report.OutputCounts{Requests: 10, Repeated: iptr(0), Short: iptr(4), IgnoreEOS: bptr(false)}, 0.05,
			"are suspect (4 short)", "0 / 0 / 4 of 10 (40.00% bad)"},
		{"unknown counts give a lower bound", report.OutputCounts{Requests: 10, Empty: 1}, 0.05,
			"1 of 10 successful formal outputs (10.00%) are suspect (1 empty)", "1 / — / — of 10 (≥ 10.00% bad)"},
		{"no successful request", report.OutputCounts{}, 0, "", "0 / — / — of 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := fixtureReport(t)
			valid, nflags := r.Valid, len(r.Flags)
			addOutputSanity(r, tc.counts, tc.max)
			if r.OutputSanity == nil || r.OutputSanity.Requests != tc.counts.Requests || r.OutputSanity.MaxBadRatio != tc.max {
				t.Fatalf("output_sanity = %+v", r.OutputSanity)
			}
			if got := sanityCell(r.OutputSanity); got != tc.wantCell {
				t.Errorf("cell %q, want %q", got, tc.wantCell)
			}
			if r.Valid != valid {
				t.Error("output sanity changed the run's validity")
			}
			added := r.Flags[nflags:]
			if tc.wantFlag == "" {
				if len(added) != 0 {
					t.Errorf("unexpected flags %+v", added)
				}
				return
			}
			if len(added) != 1 || added[0].Code != contract.FlagOutputsSuspect || added[0].Excluding || !strings.Contains(added[0].Message, tc.wantFlag) {
				t.Errorf("flags %+v, want one non-excluding %s containing %q", added, contract.FlagOutputsSuspect, tc.wantFlag)
			}
		})
	}
}

// TestGoldenOutputSanity: the fixture's report with the archive's counts:
// output_sanity in report.json, the row right after throughput in report.md,
// and the flag.
func TestGoldenOutputSanity(t *testing.T) {
	r, _ := fixtureReport(t)
	arch, err := runarchive.OpenDir(filepath.Join("testdata", "archive", "fixture-1"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := readBenchArchive(arch, "fixture-1")
	if err != nil {
		t.Fatal(err)
	}
	addOutputSanity(r, a.sanity, fixtureParams().MaxBadOutputRatio)
	js, err := report.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "fixture.sanity.report.json", js)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "fixture.sanity.report.md", md.Bytes())
}

// TestRunWithArchive analyzes the fixture through the TSDB with
// Config.Archive and checks every written file shows the counts.
func TestRunWithArchive(t *testing.T) {
	s := startPromserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AppendSamples(ctx, fixtureSamples(fixture())); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join("testdata", "archive", "fixture-1")
	dir := filepath.Join(t.TempDir(), "report")
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), OutDir: dir, Archive: archive}
	if _, err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, report.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OutputSanity map[string]any `json:"output_sanity"`
		Flags        []report.Flag  `json:"flags"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	// 10 successful formal requests: one empty, one repeat, one short.
	want := map[string]any{"requests": 10.0, "empty": 1.0, "repeated": 1.0, "short": 1.0, "ignore_eos": true, "bad": 3.0, "bad_ratio": 0.3, "max_bad_ratio": 0.05}
	for k, v := range want {
		if doc.OutputSanity[k] != v {
			t.Errorf("output_sanity.%s = %v, want %v", k, doc.OutputSanity[k], v)
		}
	}
	var flagged bool
	for _, f := range doc.Flags {
		flagged = flagged || (f.Code == contract.FlagOutputsSuspect && !f.Excluding)
	}
	if !flagged {
		t.Errorf("no non-excluding %s flag in %+v", contract.FlagOutputsSuspect, doc.Flags)
	}
	row := "| output sanity: empty / repeated / short of successful formal outputs, ignore_eos on | 1 / 1 / 1 of 10 (30.00% bad) |"
	md, err := os.ReadFile(filepath.Join(dir, report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(md, []byte("| throughput |")); i < 0 || !bytes.HasPrefix(md[i+bytes.IndexByte(md[i:], '\n')+1:], []byte(row)) {
		t.Errorf("report.md has no %q right after throughput:\n%s", row, md)
	}
	html, err := os.ReadFile(filepath.Join(dir, report.FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte(">1 / 1 / 1 of 10 (30.00% bad)</td>")) || !bytes.Contains(html, []byte(contract.FlagOutputsSuspect)) {
		t.Error("report.html lacks the output sanity cell or the flag")
	}
}

func TestConfigArchive(t *testing.T) {
	base := Config{PrometheusURL: "http://127.0.0.1:9090", RunID: "fixture-1"}
	archives := filepath.Join("testdata", "archive")
	tests := []struct {
		name, archive, runsDir, runID string
		wantDir, wantErr              string
	}{
		{"archive", filepath.Join(archives, "fixture-1"), "", "fixture-1", filepath.Join(archives, "fixture-1"), ""},
		{"another run's archive", filepath.Join(archives, "fixture-1"), "", "other", "", `holds run "fixture-1", not "other"`},
		{"no requests.jsonl", "testdata", "", "fixture-1", "", "no requests.jsonl"},
		{"missing archive", filepath.Join(archives, "absent"), "", "fixture-1", "", "no such file"},
		{"runs dir", "", archives, "fixture-1", filepath.Join(archives, "fixture-1"), ""},
		{"runs dir without the run", "", archives, "other", "", ""},
		{"archive wins over runs dir", filepath.Join(archives, "fixture-1"), "testdata", "fixture-1", filepath.Join(archives, "fixture-1"), ""},
		{"neither", "", "", "fixture-1", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Archive, c.RunsDir, c.RunID = tc.archive, tc.runsDir, tc.runID
			// Validate reads no file: every case passes it.
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			a, err := c.openArchive()
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("openArchive() = %v, want %q", err, tc.wantErr)
			}
			switch {
			case tc.wantDir == "" && a != nil:
				t.Errorf("openArchive() = %s, want none", a.dir)
			case tc.wantDir != "" && (a == nil || a.dir != tc.wantDir):
				t.Errorf("openArchive() = %v, want %s", a, tc.wantDir)
			}
		})
	}
	p := DefaultParams()
	p.MaxBadOutputRatio = 1.5
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "bad output ratio") {
		t.Errorf("max bad output ratio 1.5: %v", err)
	}
}
