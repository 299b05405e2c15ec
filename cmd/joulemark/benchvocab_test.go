package main

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/benchjob"
)

// One vocabulary: every bench flag that fills an experiment setting is
// named after its path in the file, found by setting the flag alone and
// seeing which path of the config changes; every setting of the file has
// a flag or is listed as file-only with a reason.
func TestBenchFlagsAreYAMLPaths(t *testing.T) {
	_, p := testParser(t)
	bench := findCommand(p.Model.Node, "bench")
	base := benchYAML(t)
	file := filepath.Join(t.TempDir(), "http.yml")
	if err := os.WriteFile(file, []byte("tls_config:\n  insecure_skip_verify: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	covered := map[string]string{}
	for _, f := range bench.Flags {
		want, fills := benchSetting(f.Name)
		if !fills {
			continue
		}
		arg := benchTestArg(t, f, file)
		changed := diffPaths(base, benchYAML(t, arg), "")
		if len(changed) == 0 {
			t.Errorf("bench %s changes no setting of the experiment file", arg)
			continue
		}
		for _, c := range changed {
			if c != want && !strings.HasPrefix(c, want+".") {
				t.Errorf("bench %s sets %s, want the flag named after its path (%s)", arg, c, want)
			}
		}
		covered[want] = f.Name
	}
	unused := maps.Clone(benchFileOnly)
	for _, s := range yamlSettings(reflect.TypeFor[benchjob.Config](), "") {
		reason, fileOnly := benchFileOnly[s]
		switch {
		case fileOnly && covered[s] != "":
			t.Errorf("%s is listed file-only (%s) but --%s sets it", s, reason, covered[s])
		case !fileOnly && covered[s] == "":
			t.Errorf("setting %s has no bench flag: add --%s or list it in benchFileOnly with a reason", s, strings.ReplaceAll(s, "_", "-"))
		}
		delete(unused, s)
	}
	for s := range unused {
		t.Errorf("benchFileOnly lists %s, which is no setting of the experiment file", s)
	}
}

// benchTestArg is a flag with a value of its type other than its default.
func benchTestArg(t *testing.T, f *kong.Flag, file string) string {
	t.Helper()
	flag := "--" + f.Name
	if f.Tag.Type == "existingfile" {
		return flag + "=" + file
	}
	if len(f.Tag.Enum) > 0 {
		for _, e := range f.EnumSlice() {
			if e != f.Default {
				return flag + "=" + e
			}
		}
	}
	typ := f.Target.Type()
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == reflect.TypeFor[time.Duration]():
		return flag + "=7s"
	case typ.Kind() == reflect.Bool:
		return flag
	case typ.Kind() == reflect.String:
		if f.Tag.Type == "runid" {
			return flag + "=r7"
		}
		return flag + "=ns1/x7"
	case typ.Kind() == reflect.Int, typ.Kind() == reflect.Int64:
		return flag + "=7"
	case typ.Kind() == reflect.Float64:
		return flag + "=0.25"
	case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String:
		return flag + "=GPU-7"
	case typ.Kind() == reflect.Slice:
		return flag + "=3,5"
	}
	t.Fatalf("--%s: no test value for a %s", f.Name, typ)
	return ""
}

// benchYAML is the config the bench flags give, as the experiment file's
// YAML tree.
func benchYAML(t *testing.T, args ...string) map[string]any {
	t.Helper()
	c, err := parseBench(t, args...)
	if err != nil {
		t.Fatalf("bench %v: %v", args, err)
	}
	cfg, err := c.config()
	if err != nil {
		t.Fatalf("bench %v: %v", args, err)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// diffPaths lists the leaf paths where a and b differ.
func diffPaths(a, b map[string]any, prefix string) []string {
	var out []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		path := prefix + k
		am, aok := a[k].(map[string]any)
		bm, bok := b[k].(map[string]any)
		switch {
		case aok && bok:
			out = append(out, diffPaths(am, bm, path+".")...)
		case !reflect.DeepEqual(a[k], b[k]):
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// yamlSettings lists the settings of an experiment file: the yaml paths
// of t's leaves, an HTTP client configuration being one setting.
func yamlSettings(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[config.HTTPClientConfig]() {
			out = append(out, yamlSettings(ft, prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}

// The walk finds a renamed flag: a flag named otherwise than its path
// fails the test above (checked here on a made-up pair).
func TestSettingOf(t *testing.T) {
	for flag, want := range map[string]string{
		"workload.mean-input-tokens": "workload.mean_input_tokens",
		"exporter.url":               "exporters",
		"timeouts.total":             "timeouts.total",
	} {
		if got, _ := benchSetting(flag); got != want {
			t.Errorf("benchSetting(%s) = %s, want %s", flag, got, want)
		}
	}
	if _, fills := benchSetting("config"); fills {
		t.Error("--config fills a setting")
	}
	if slices.Contains(yamlSettings(reflect.TypeFor[benchjob.Config](), ""), "target_http.tls_config") {
		t.Error("an HTTP client configuration is split into its fields")
	}
}
