package reportcsv

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
)

func TestFlatten(t *testing.T) {
	doc := `{"run_id":"r1","valid":true,"energy":{"joules":1.50e3,"per_gpu":[{"gpu":"0","j":700},{"gpu":"1","j":800}]},
		"flags":["a","b"],"none":null,"empty":[],"nested":[[1,2],[3]],"big":12345678901234567890,"small":1e-7}`
	got, err := Flatten([]byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{{"run_id", "r1"}, {"valid", "true"}, {"energy.joules", "1.50e3"},
		{"energy.per_gpu.0.gpu", "0"}, {"energy.per_gpu.0.j", "700"}, {"energy.per_gpu.1.gpu", "1"}, {"energy.per_gpu.1.j", "800"},
		{"flags", "a;b"}, {"none", ""}, {"empty", ""}, {"nested.0", "1;2"}, {"nested.1", "3"},
		{"big", "12345678901234567890"}, {"small", "1e-7"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if fs, _ := Flatten([]byte(`{"a":1}`), "report"); len(fs) != 1 || fs[0].Key != "report.a" {
		t.Errorf("prefix: %v", fs)
	}
	for _, bad := range []string{`{"a":`, `{"a":1} {}`, `{"a":[1,}`} {
		if _, err := Flatten([]byte(bad), ""); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Rows with different keys: the header is the union in first-seen order.
func TestTableUnion(t *testing.T) {
	var tb Table
	tb.Add([]Field{{"a", "1"}, {"b", "2"}})
	tb.Add([]Field{{"a", "3"}, {"c", "x,y \"q\""}})
	var buf bytes.Buffer
	if err := tb.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := "a,b,c\n1,2,\n3,,\"x,y \"\"q\"\"\"\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// Every report fixture goes to CSV and back: each cell is the JSON's
// value, in the first report's key order.
func TestReportRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "runset", "testdata", "runs", "*", "report.json"))
	if len(files) < 3 {
		t.Fatalf("%d report fixtures", len(files))
	}
	var tb Table
	var docs []any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.AddJSON([]Field{{"file", f}}, b); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, csvtest.Decode(t, b))
	}
	var buf bytes.Buffer
	if err := tb.Write(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(files)+1 {
		t.Fatalf("%d records for %d reports", len(recs), len(files))
	}
	header := recs[0]
	checked := 0
	for i, rec := range recs[1:] {
		for j, key := range header[1:] {
			cell := rec[j+1]
			want, ok := csvtest.Lookup(docs[i], key)
			switch {
			case !ok && cell != "":
				t.Errorf("%s: column %s = %q, the report has no such key", files[i], key, cell)
			case ok && cell != want:
				t.Errorf("%s: column %s = %q, the report has %q", files[i], key, cell, want)
			case ok:
				checked++
			}
		}
	}
	if checked < 50*len(files) {
		t.Errorf("only %d cells checked", checked)
	}
	// Stable order: the first report's keys lead, in its order.
	first, _ := Flatten(mustRead(t, files[0]), "")
	for i, f := range first {
		if header[i+1] != f.Key {
			t.Fatalf("column %d is %s, the first report's key %d is %s", i+1, header[i+1], i, f.Key)
		}
	}
}

func mustRead(t *testing.T, f string) []byte {
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WriteDocument (analyze --format csv) writes report.json as one row whose
// cells read back to the report's values.
func TestWriteDocument(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "runset", "testdata", "runs", "vllm-tp1", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteDocument(&buf, b); err != nil {
		t.Fatal(err)
	}
	header, rows := csvtest.Rows(t, buf.String())
	doc := csvtest.Decode(t, b)
	if len(rows) != 1 || len(header) < 50 {
		t.Fatalf("%d rows, %d columns", len(rows), len(header))
	}
	for i, key := range header {
		if want, ok := csvtest.Lookup(doc, key); !ok || rows[0][i] != want {
			t.Errorf("%s = %q, report.json %q (%v)", key, rows[0][i], want, ok)
		}
	}
}

// Value writes a command's own cells: lists joined by ";", floats in
// their shortest form, a nil *float64 empty.
func TestValue(t *testing.T) {
	half := 0.5
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"a", "a"}, {[]string{"a", "b"}, "a;b"}, {1.0 / 3, "0.3333333333333333"}, {1e21, "1e+21"},
		{&half, "0.5"}, {(*float64)(nil), ""}, {true, "true"}, {3, "3"},
	} {
		if got := Value("k", tc.v); got != (Field{"k", tc.want}) {
			t.Errorf("Value(%#v) = %+v, want %q", tc.v, got, tc.want)
		}
	}
}
