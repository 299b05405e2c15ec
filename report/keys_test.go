package report

import (
	"strings"
	"testing"
)

// TestDecodeDocumentRefusesNonReports: `{}`, a report missing a required
// key and one without a run id are refused, each saying why.
func TestDecodeDocumentRefusesNonReports(t *testing.T) {
	full := map[string]string{}
	for _, k := range RequiredKeys {
		full[k] = "null"
	}
	full["run_id"] = `"r1"`
	doc := func(drop string, runID string) string {
		var parts []string
		for _, k := range RequiredKeys {
			if k == drop {
				continue
			}
			v := full[k]
			if k == "run_id" && runID != "" {
				v = runID
			}
			parts = append(parts, `"`+k+`": `+v)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if _, raw, err := DecodeDocument([]byte(doc("", ""))); err != nil || raw["run_id"] != "r1" {
		t.Fatalf("complete report: %v, %v", raw["run_id"], err)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"empty", `{}`, "none of its keys"},
		{"missing", doc("goodput", ""), "missing goodput"},
		{"no run id", doc("", `""`), "run_id is"},
		{"syntax", "{\n\"run_id\": }", "line 2"},
	} {
		if _, _, err := DecodeDocument([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
