package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/runset"
)

// repReports writes crafted reports of repetitions (group, steady-state
// J/token, valid) and loads them as compare reads them.
func repReports(t *testing.T, reps ...struct {
	id, group string
	ss        float64
	valid     bool
}) []*runset.Run {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, r := range reps {
		ss := r.ss
		rep := report.Report{RunID: r.id, Valid: r.valid, Scenario: "s",
			Run: &report.RunIdentity{RunIdentity: contract.RunIdentity{RunID: r.id, Model: "m", Engine: "sim", LoadMode: "closed", Concurrency: 8,
				Mode: contract.ModeLifecycle, RepetitionGroup: r.group, Repetition: i + 1, Repetitions: 3}}}
		rep.Tokens.FormalOutput = 1000
		rep.SteadyState.Reached, rep.SteadyState.JoulesPerToken = true, &ss
		if !r.valid {
			rep.Flags = []report.Flag{{Code: "release_not_closed", Excluding: true}}
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, r.id+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	set, err := runset.Load(paths, runset.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set.Runs
}

type repSpec = struct {
	id, group string
	ss        float64
	valid     bool
}

// compare reports each repetition group: its pooled median and range, how
// many repetitions passed validation, whether they agree; the scenario
// groups split by repetition group, never pooling two.
func TestCompareRepetitions(t *testing.T) {
	runs := repReports(t,
		repSpec{"a-rep1", "a", 0.40, true}, repSpec{"a-rep2", "a", 0.42, true}, repSpec{"a-rep3", "a", 0.90, false},
		repSpec{"b-rep1", "b", 0.40, true}, repSpec{"b-rep2", "b", 0.62, true})
	res := Compare(runset.NewSet(runs), Options{})
	if len(res.Repetitions) != 2 {
		t.Fatalf("%d repetition groups, want 2", len(res.Repetitions))
	}
	a, b := res.Repetitions[0], res.Repetitions[1]
	if ss := a.Metrics[runset.SteadyStateJPT.Key]; ss == nil || math.Abs(ss.Median-0.41) > 1e-12 || ss.N != 2 || a.Agreement.Valid != 2 || a.Agreement.Found != 3 || !a.Agreement.Agree {
		t.Errorf("group a %+v %+v", a.Metrics[runset.SteadyStateJPT.Key], a.Agreement)
	}
	if b.Agreement.Agree || !strings.Contains(b.Agreement.Verdict, "b-rep1 -22%") {
		t.Errorf("group b agreement %+v", b.Agreement)
	}
	if len(res.Groups) != 2 || !strings.Contains(res.Groups[0].Key, "repetition_group=a") {
		t.Errorf("scenario groups %+v, want split by repetition group", res.Groups)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"repetition groups:", "0.41 (0.4–0.42)", "2/3 ", "2/2 of 3", "not pooled: a-rep3: invalid: release_not_closed", "disagree"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := WriteHTML(&buf, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<h2>Repetition groups</h2>") || !strings.Contains(buf.String(), "0.41 (0.4–0.42)") {
		t.Error("compare.html lacks the repetition groups")
	}
	buf.Reset()
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"repetitions": [`, `"interval": "min-max"`, `"relative_range"`, `"agree": true`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("JSON lacks %q", want)
		}
	}
}
