package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffRejectsNonReports: `{}`, `null`, a manifest or a report missing
// a required key is an error naming the file and what is missing, on
// either side, before anything is compared.
func TestDiffRejectsNonReports(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(fixture("diff", "before.json"))
	if err != nil {
		t.Fatal(err)
	}
	var full map[string]any
	if err := json.Unmarshal(good, &full); err != nil {
		t.Fatal(err)
	}
	delete(full, "steady_state")
	noSteady, _ := json.Marshal(full)
	full["steady_state"], full["run_id"] = map[string]any{}, ""
	emptyID, _ := json.Marshal(full)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty.json", `{}`, "not a joulemark report: none of its keys"},
		{"null.json", `null`, "not a joulemark report"},
		{"manifest.json", `{"run_id":"r1","load":{"mode":"closed","concurrency":8}}`, "missing valid, flags, stages"},
		{"no-steady.json", string(noSteady), "missing steady_state"},
		{"empty-id.json", string(emptyID), "run_id is"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, side := range []string{"before", "after"} {
			c := &DiffCmd{Before: fixture("diff", "before.json"), After: fixture("diff", "after-ok.json"), FailOnRegression: 5, output: output{&bytes.Buffer{}}}
			if side == "before" {
				c.Before = path
			} else {
				c.After = path
			}
			err := c.Run(&Globals{})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s as %s: %v, want an error naming the file and %q", tc.name, side, err, tc.want)
			}
		}
	}
}
