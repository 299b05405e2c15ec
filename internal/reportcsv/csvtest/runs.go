package csvtest

import (
	"encoding/csv"
	"os"
	"strings"
	"testing"
)

// Rows parses the CSV s into its header and rows; it fails t unless s has
// a header and at least one row.
func Rows(t testing.TB, s string) (header []string, rows [][]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSV: %v (%d records):\n%s", err, len(recs), s)
	}
	return recs[0], recs[1:]
}

// Reports decodes the report.json files by their run_id.
func Reports(t testing.TB, files []string) map[string]any {
	t.Helper()
	docs := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v := Decode(t, b)
		id, _ := Lookup(v, "run_id")
		docs[id] = v
	}
	return docs
}

// CheckRuns checks out, a CSV of one row per run (docs/cli.md, "Output"):
// its first columns are lead, each run's first lead cell is first[run_id],
// and every other cell reads back to the value in its run's report of
// docs (Reports). It returns how many report cells it checked.
func CheckRuns(t testing.TB, out string, lead []string, first map[string]string, docs map[string]any) int {
	t.Helper()
	header, rows := Rows(t, out)
	if len(rows) != len(docs) {
		t.Errorf("%d rows for %d reports", len(rows), len(docs))
	}
	for i, l := range lead {
		if i >= len(header) || header[i] != l {
			t.Fatalf("column %d of %v, want %q", i, header, l)
		}
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	checked := 0
	for _, row := range rows {
		id := row[col["run_id"]]
		doc, ok := docs[id]
		if !ok {
			t.Fatalf("row of unknown run %q", id)
		}
		if got, want := row[0], first[id]; got != want {
			t.Errorf("%s %s = %q in CSV, %q in JSON", id, lead[0], got, want)
		}
		for _, key := range header[len(lead):] {
			want, ok := Lookup(doc, key)
			cell := row[col[key]]
			if !ok && cell != "" || ok && cell != want {
				t.Errorf("run %s column %s = %q, report.json has %q (%v)", id, key, cell, want, ok)
			}
			checked++
		}
	}
	return checked
}

// ByRun maps the run_id of each item of list (decoded JSON) to its value
// at key.
func ByRun(list []any, key string) map[string]string {
	out := map[string]string{}
	for _, e := range list {
		id, _ := Lookup(e, "run_id")
		out[id], _ = Lookup(e, key)
	}
	return out
}
