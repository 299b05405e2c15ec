package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

const configMapPath = "../deploy/kubernetes/dashboards-configmap.yaml"

func render(t *testing.T) []File {
	t.Helper()
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCommittedUpToDate fails when the committed JSON or ConfigMap differ
// from a fresh generation.
func TestCommittedUpToDate(t *testing.T) {
	files := render(t)
	var want []string
	for _, f := range files {
		want = append(want, f.Name)
		got, err := os.ReadFile(f.Name)
		if err != nil {
			t.Errorf("%s: %v (run `go generate ./dashboards`)", f.Name, err)
			continue
		}
		if !bytes.Equal(got, f.JSON) {
			t.Errorf("dashboards/%s differs from a fresh generation; run `go generate ./dashboards` and commit", f.Name)
		}
	}
	committed, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(committed, want) {
		t.Errorf("dashboards/*.json = %v, generated %v: remove stale files or regenerate", committed, want)
	}

	cm, err := ConfigMap(files)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(configMapPath)
	if err != nil {
		t.Fatalf("%v (run `go generate ./dashboards`)", err)
	}
	if !bytes.Equal(got, cm) {
		t.Errorf("%s differs from a fresh generation; run `go generate ./dashboards` and commit", configMapPath)
	}
}

func TestRenderDeterministic(t *testing.T) {
	a, b := render(t), render(t)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two renders differ")
	}
}

func TestGenerateWritesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	cmPath := filepath.Join(t.TempDir(), "cm.yaml")
	// A previous, different file is replaced whole.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet-energy.json"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	written, err := Generate(dir, cmPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(definitions)+1 {
		t.Errorf("wrote %d files, want %d", len(written), len(definitions)+1)
	}
	for _, f := range render(t) {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.JSON) {
			t.Errorf("%s: written content differs from Render", f.Name)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	if _, err := os.Stat(cmPath); err != nil {
		t.Error(err)
	}

	// An unwritable destination is an error naming the file.
	if _, err := Generate(filepath.Join(dir, "fleet-energy.json", "sub"), ""); err == nil {
		t.Error("Generate into a path under a file: no error")
	}
}

// load unmarshals a generated file through the SDK with its plugins
// registered.
func load(t *testing.T, f File) dashboard.Dashboard {
	t.Helper()
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := json.Unmarshal(f.JSON, &d); err != nil {
		t.Fatalf("%s: unmarshal through the SDK: %v", f.Name, err)
	}
	return d
}

// panels returns every non-row panel of d, rows' nested panels included.
func panels(d dashboard.Dashboard) []dashboard.Panel {
	var out []dashboard.Panel
	for _, p := range d.Panels {
		if p.Panel != nil {
			out = append(out, *p.Panel)
		}
		if p.RowPanel != nil {
			out = append(out, p.RowPanel.Panels...)
		}
	}
	return out
}

// TestRoundTrip loads the JSON back through the SDK, checks the queries
// decode as Prometheus queries, and that re-encoding loses nothing.
func TestRoundTrip(t *testing.T) {
	for _, f := range render(t) {
		t.Run(f.Name, func(t *testing.T) {
			d := load(t, f)
			n := 0
			for _, p := range panels(d) {
				for _, q := range p.Targets {
					if _, ok := q.(*prometheus.Dataquery); !ok {
						t.Errorf("panel %q: target decoded as %T, want *prometheus.Dataquery", deref(p.Title), q)
					}
					n++
				}
				if p.Options == nil {
					t.Errorf("panel %q: options lost", deref(p.Title))
				}
			}
			if n == 0 {
				t.Fatal("no queries decoded")
			}
			again, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if err := json.Unmarshal(f.JSON, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(again, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Error("JSON -> SDK -> JSON is not lossless")
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestPanelsDocumented: every panel has a title, a unit, a description that
// states its measurement boundary, and queries through the datasource variable.
func TestPanelsDocumented(t *testing.T) {
	for _, f := range render(t) {
		d := load(t, f)
		for _, p := range panels(d) {
			title := deref(p.Title)
			where := f.Name + ": panel " + title
			if title == "" {
				t.Errorf("%s: no title", where)
			}
			if p.FieldConfig == nil || deref(p.FieldConfig.Defaults.Unit) == "" {
				t.Errorf("%s: no unit", where)
			}
			desc := deref(p.Description)
			if !strings.Contains(desc, "Boundary: ") || len(desc) < 60 {
				t.Errorf("%s: description does not say what it measures and its boundary: %q", where, desc)
			}
			if p.Datasource == nil || deref(p.Datasource.Uid) != "${datasource}" {
				t.Errorf("%s: datasource is not the datasource variable", where)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no query", where)
			}
		}
	}
}

func TestTemplateVariables(t *testing.T) {
	for _, f := range render(t) {
		d := load(t, f)
		var names []string
		for _, v := range d.Templating.List {
			names = append(names, v.Name)
		}
		for _, want := range []string{"datasource", "node", "gpu", "run_id"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s: no %q variable (has %v)", f.Name, want, names)
			}
		}
	}
}

// TestNoEmptySettings: an empty string in the JSON is an SDK default that
// Grafana does not know (tooltip mode "", orientation "", ...).
func TestNoEmptySettings(t *testing.T) {
	for _, f := range render(t) {
		var v any
		if err := json.Unmarshal(f.JSON, &v); err != nil {
			t.Fatal(err)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					walk(path+"."+k, e)
				}
			case []any:
				for i, e := range x {
					walk(fmt.Sprintf("%s[%d]", path, i), e)
				}
			case string:
				if x == "" {
					t.Errorf("%s: %s is an empty string", f.Name, path)
				}
			}
		}
		walk("", v)
	}
}
