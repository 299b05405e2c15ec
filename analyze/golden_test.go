package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/report"
)

// sameJSON compares two JSON documents, numbers within a relative 1e-9:
// the Prometheus path rounds timestamps to milliseconds.
func sameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if diffs := jsonDiff("", g, w, nil); len(diffs) > 0 {
		for _, d := range diffs {
			t.Error(d)
		}
	}
}

func jsonDiff(path string, g, w any, out []string) []string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: got %v, want an object", path, g))
		}
		for k := range wv {
			out = jsonDiff(path+"."+k, gv[k], wv[k], out)
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: unexpected %v", path, k, gv[k]))
			}
		}
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			return append(out, fmt.Sprintf("%s: got %v, want %v", path, g, w))
		}
		for i := range wv {
			out = jsonDiff(fmt.Sprintf("%s[%d]", path, i), gv[i], wv[i], out)
		}
	case float64:
		gv, ok := g.(float64)
		if !ok || math.Abs(gv-wv) > 1e-9*math.Max(1, math.Abs(wv)) {
			return append(out, fmt.Sprintf("%s: got %v, want %v", path, g, w))
		}
	default:
		if g != w {
			return append(out, fmt.Sprintf("%s: got %v, want %v", path, g, w))
		}
	}
	return out
}

func fixtureReport(t *testing.T) (*report.Report, *PlotData) {
	t.Helper()
	r, pd, err := computeSeries(fixture(), fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	return r, pd
}

func TestGoldenFixtureReport(t *testing.T) {
	r, _ := fixtureReport(t)
	js, err := report.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "fixture.report.json", js)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "fixture.report.md", md.Bytes())
}
