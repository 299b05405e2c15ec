package compare

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
	"github.com/joulemark/joulemark/runset"
)

// compare as CSV: one row per run, its group and inclusion first, then
// report.json's keys; every report cell reads back to the value in the
// report, and the group agrees with the JSON.
func TestWriteCSV(t *testing.T) {
	res := Compare(runset.NewSet(load(t, all...)), Options{GroupBy: "scenario", Tolerance: 0.2})
	var c, j bytes.Buffer
	if err := WriteCSV(&c, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, res); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, n := range all {
		files = append(files, filepath.Join("testdata", "reports", n+".json"))
	}
	list, _ := csvtest.Decode(t, j.Bytes()).(map[string]any)["runs"].([]any)
	lead := []string{"compare.group", "compare.included", "compare.excluded"}
	if n := csvtest.CheckRuns(t, c.String(), lead, csvtest.ByRun(list, "group"), csvtest.Reports(t, files)); n < 100 {
		t.Errorf("%d cells checked", n)
	}
}
