package benchjob

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// runs list: oldest first, a run without a manifest listed as unknown with
// why, in each format.
func TestRunList(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []*runarchive.Manifest{
		{RunID: "r-b", Status: runarchive.StatusRunning, Created: 1700000100},
		{RunID: "r-a", Status: runarchive.StatusCompleted, Created: 1700000000.5, Flags: []string{"x", "y"}, Summary: &runarchive.Summary{Started: 12}},
	} {
		r, err := runarchive.Create(dir, m.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WriteManifest(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "r-c"), 0o755); err != nil {
		t.Fatal(err)
	}
	// r-a analysed (invalid, one excluding flag), r-b's report unreadable,
	// r-c not analysed.
	writeReport(t, filepath.Join(dir, "r-a"), `{"run_id":"r-a","valid":false,"flags":[{"code":"steady_state_not_reached","excluding":true},{"code":"w","excluding":false}]}`)
	writeReport(t, filepath.Join(dir, "r-b"), `{"valid":`)
	rows, err := ListRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"csv": "run_id,status,start,requests,valid,flags\nr-c,unknown,,,not analysed,\nr-a,completed,2023-11-14T22:13:20Z,12,no (steady_state_not_reached),x;y\nr-b,running,2023-11-14T22:15:00Z,,unreadable report,\n",
		"text": "RUN ID  STATUS     START                 REQUESTS  VALID                          FLAGS\n" +
			"r-c     unknown    n/a                   n/a       not analysed                   (run archive " + filepath.Join(dir, "r-c") + ": no manifest.json: file does not exist)\n" +
			"r-a     completed  2023-11-14T22:13:20Z  12        no (steady_state_not_reached)  x,y\n" +
			"r-b     running    2023-11-14T22:15:00Z  n/a       unreadable report              (report " + filepath.Join(dir, "r-b", "report", "report.json") + ": line 1: unexpected end of JSON input)\n",
	}
	for format, w := range want {
		var buf bytes.Buffer
		if err := WriteRunList(&buf, format, rows); err != nil || buf.String() != w {
			t.Errorf("%s (%v):\n%s\nwant:\n%s", format, err, buf.String(), w)
		}
	}
	var buf bytes.Buffer
	if err := WriteRunList(&buf, "json", rows); err != nil {
		t.Fatal(err)
	}
	var back []RunListing
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != 3 || back[1].Requests == nil || *back[1].Requests != 12 ||
		back[2].Requests != nil || !strings.Contains(back[0].Error, "no manifest.json") || back[2].Flags == nil ||
		back[0].Valid != nil || back[1].Valid == nil || *back[1].Valid || back[2].ReportError == "" {
		t.Errorf("json (%v):\n%s", err, buf.String())
	}
}

func writeReport(t *testing.T, runDir, js string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(runDir, "report"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "report", "report.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An empty runs directory lists as [] in JSON; a missing one is an error.
func TestRunListEmpty(t *testing.T) {
	rows, err := ListRuns(t.TempDir())
	var buf bytes.Buffer
	if err != nil || WriteRunList(&buf, "json", rows) != nil || buf.String() != "[]\n" {
		t.Errorf("empty: %v %q", err, buf.String())
	}
	if _, err := ListRuns(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("missing runs directory: no error")
	}
}

// A manifest is not ours to trust: a comma in a field stays in its CSV
// cell.
func TestRunListCSVQuotes(t *testing.T) {
	rows := []RunListing{{RunID: "r1", Status: "odd,status", Flags: []string{"a,b", "c"}}}
	var buf bytes.Buffer
	if err := WriteRunList(&buf, "csv", rows); err != nil {
		t.Fatal(err)
	}
	if want := "run_id,status,start,requests,valid,flags\nr1,\"odd,status\",,,not analysed,\"a,b;c\"\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// runs finalize's report: exporters in URL order, the run's archive, and
// an error naming every exporter that could not end the run.
func TestFinalizeWriteText(t *testing.T) {
	r := &FinalizeResult{Manifest: &runarchive.Manifest{Status: runarchive.StatusKilled}, EngineKilled: true,
		Exporters: map[string]*phaseapi.RunStatus{
			"http://b:9402": {State: "ended", EndReason: "finalized"},
			"http://a:9402": {State: "ended", EndReason: "finalized"},
		},
		ExporterErrors: map[string]error{"http://d:9402": errors.New("refused"), "http://c:9402": errors.New("timeout")},
	}
	var buf bytes.Buffer
	err := r.WriteText(&buf, "runs", "r1")
	want := "engine: killed the process group the run left\n" +
		"exporter http://a:9402: run r1 ended (finalized)\n" +
		"exporter http://b:9402: run r1 ended (finalized)\n" +
		"run r1: status killed, archive final in runs/r1\n"
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
	if err == nil || err.Error() != "the archive is final but the run could not be ended on: exporter http://c:9402: timeout; exporter http://d:9402: refused" {
		t.Errorf("err = %v", err)
	}
	r.ExporterErrors, r.EngineKilled = nil, false
	buf.Reset()
	if err := r.WriteText(&buf, "runs", "r1"); err != nil || strings.Contains(buf.String(), "engine:") {
		t.Errorf("all ended: %v\n%s", err, buf.String())
	}
}
