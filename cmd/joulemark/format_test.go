package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
)

// runOut runs a command of the CLI with its output in a buffer.
func runOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cli := parseCLI(t, args...)
	var buf bytes.Buffer
	var err error
	switch args[0] {
	case "compare":
		cli.Compare.stdout = &buf
		err = cli.Compare.Run(&cli.Globals)
	case "pareto":
		cli.Pareto.stdout = &buf
		err = cli.Pareto.Run(&cli.Globals)
	case "recommend":
		cli.Recommend.stdout = &buf
		err = cli.Recommend.Run(&cli.Globals)
	case "diff":
		cli.Diff.stdout = &buf
		err = cli.Diff.Run(&cli.Globals)
	case "plan":
		cli.Plan.stdout = &buf
		err = cli.Plan.Run(&cli.Globals)
	default:
		t.Fatalf("no such command %s", args[0])
	}
	return buf.String(), err
}

// --format picks the package's writer: csv starts with the command's own
// column, json decodes. The tables themselves are tested where they are
// written (runset, runset/compare).
func TestFormatWiring(t *testing.T) {
	reports, _ := filepath.Glob(fixture("runs", "*", "report.json"))
	sweep, _ := filepath.Glob(fixture("sweep", "*", "report.json"))
	before, after := fixture("diff", "before.json"), fixture("diff", "after-ok.json")
	for _, tc := range []struct {
		args  []string
		first string // first CSV column
	}{
		{append([]string{"compare"}, reports...), "compare.group"},
		{append([]string{"pareto"}, reports...), "pareto.rank"},
		{append([]string{"pareto", "--group-by", "run.model"}, reports...), "pareto.group"},
		{append([]string{"recommend", "--max-ttft-p95", "10s"}, reports...), "recommend.status"},
		{append([]string{"plan", "--target-peak-rate", "100", "--slo.ttft-p95", "500ms"}, sweep...), "plan.admission_limit"},
		{[]string{"diff", before, after}, "before_run"},
	} {
		out, err := runOut(t, append(tc.args, "--format", "csv")...)
		if err != nil {
			t.Fatalf("%s --format csv: %v", tc.args[0], err)
		}
		if header, _ := csvtest.Rows(t, out); header[0] != tc.first {
			t.Errorf("%s --format csv: first column %q, want %q", tc.args[0], header[0], tc.first)
		}
		js, err := runOut(t, append(tc.args, "--format", "json")...)
		if err != nil {
			t.Fatalf("%s --format json: %v", tc.args[0], err)
		}
		csvtest.Decode(t, []byte(js))
	}
}
