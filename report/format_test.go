package report

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestFormatListsEveryKey: every top-level JSON key of Report is named in
// FORMAT.md, so the format's document cannot fall behind its type.
func TestFormatListsEveryKey(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	rt := reflect.TypeFor[Report]()
	for i := range rt.NumField() {
		key, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if key == "" || key == "-" {
			t.Errorf("field %s has no JSON key", rt.Field(i).Name)
			continue
		}
		if !strings.Contains(string(doc), "`"+key+"`") {
			t.Errorf("report.json key %q is not in FORMAT.md", key)
		}
	}
}
