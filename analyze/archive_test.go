package analyze

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestOpenArchiveRefusesBadFiles: the archive is read before any query,
// and a malformed requests.jsonl or phases.json fails the analysis naming
// the file (and the line).
func TestOpenArchiveRefusesBadFiles(t *testing.T) {
	good := `{"phase":"formal","success":true,"output_tokens":3}` + "\n"
	for _, tc := range []struct {
		name, requests, phases, want string
	}{
		{"good", good + good, `{"run_id":"a-1","exporters":[]}`, ""},
		{"bad request line", good + `{"phase":"formal","success":"yes"}` + "\n", "", filepath.Join("a-1", runarchive.RequestsFile) + ": line 2"},
		{"cut last line", good + `{"phase":"for`, "", runarchive.RequestsFile + ": line 2"},
		{"bad phases.json", good, `{"exporters":{}}`, runarchive.PhasesFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := t.TempDir()
			run, err := runarchive.Create(runs, "a-1")
			if err != nil {
				t.Fatal(err)
			}
			if err := run.WriteManifest(&runarchive.Manifest{RunID: "a-1"}); err != nil {
				t.Fatal(err)
			}
			if err := run.WriteFile(runarchive.RequestsFile, []byte(tc.requests)); err != nil {
				t.Fatal(err)
			}
			if tc.phases != "" {
				if err := run.WriteFile(runarchive.PhasesFile, []byte(tc.phases)); err != nil {
					t.Fatal(err)
				}
			}
			c := Config{PrometheusURL: "http://127.0.0.1:9090", RunID: "a-1", RunsDir: runs}
			a, err := c.openArchive()
			if tc.want == "" {
				if err != nil || a == nil || a.sanity.Requests != 2 || a.manifest == nil {
					t.Fatalf("openArchive = %+v, %v; want 2 requests and the manifest", a, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("openArchive error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
