package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/joulemark/joulemark/deploy"
	"github.com/joulemark/joulemark/internal/contract"
)

// rulesDir holds the recording rules (rules/*.yml), read at test time so the
// check follows whatever names the rules define.
const rulesDir = "../rules"

// recordingRules returns the names of the recording rules in dir's rule
// files, read as deploy reads them: files without a top-level "groups" key
// (promtool test files) are skipped, an invalid one is an error naming it.
func recordingRules(dir string) (map[string]bool, error) {
	files, err := deploy.ReadRuleFiles(dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	p := parser.NewParser(parser.Options{})
	for _, f := range files {
		groups, errs := rulefmt.Parse(f.Data, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s: %v", f.Name, errs)
		}
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					names[r.Record] = true
				}
			}
		}
	}
	return names, nil
}

var grafanaVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

// substitute replaces Grafana variables by values PromQL can parse: the
// value in vars, else built-in durations by 5m, a text-box variable by its default, other
// dashboard variables by "x" (they appear only inside label matchers). A
// variable the dashboard does not define is an error.
func substitute(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		name := grafanaVar.FindStringSubmatch(m)[1]
		if v, ok := vars[name]; ok {
			return v
		}
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("undefined dashboard variables %v", missing)
	}
	return out, nil
}

// checkExpr parses expr (after substitution) with Prometheus' parser and
// returns an error naming every metric that is not in known.
func checkExpr(expr string, vars map[string]string, known map[string]bool) error {
	s, err := substitute(expr, vars)
	if err != nil {
		return err
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(s)
	if err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	var unknown []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		if name == "" {
			unknown = append(unknown, vs.String()+" (no metric name)")
		} else if !known[name] {
			unknown = append(unknown, name)
		}
		return nil
	})
	if len(unknown) > 0 {
		return fmt.Errorf("names metrics outside the contract, the bench aggregates, the engine metrics and the recording rules: %v", unknown)
	}
	return nil
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// expressions returns every PromQL expression of d with where it is.
func expressions(d dashboard.Dashboard) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range panels(d) {
		for i, q := range p.Targets {
			pq, ok := q.(*prometheus.Dataquery)
			if !ok {
				return nil, fmt.Errorf("panel %q target %d: %T is not a Prometheus query", deref(p.Title), i, q)
			}
			out[fmt.Sprintf("panel %q query %s", deref(p.Title), deref(pq.RefId))] = pq.Expr
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != nil {
			out["annotation "+a.Name] = *a.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		if v.Query == nil || v.Query.String == nil {
			return nil, fmt.Errorf("variable %s: no query", v.Name)
		}
		m := labelValues.FindStringSubmatch(*v.Query.String)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, *v.Query.String)
		}
		out["variable "+v.Name] = m[1]
	}
	return out, nil
}

// variables maps each template variable of d to the value substitute uses.
func variables(d dashboard.Dashboard) map[string]string {
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = "x"
		if v.Type == "textbox" && v.Query != nil && v.Query.String != nil {
			vars[v.Name] = *v.Query.String
		}
	}
	return vars
}

// TestQueriesParseAndNameKnownMetrics: every dashboard query parses and
// names only metrics joulemark publishes.
func TestQueriesParseAndNameKnownMetrics(t *testing.T) {
	known := KnownMetrics()
	rules, err := recordingRules(rulesDir)
	if err != nil {
		t.Fatalf("reading recording rules: %v", err)
	}
	for r := range rules {
		known[r] = true
	}
	for _, f := range render(t) {
		d := load(t, f)
		exprs, err := expressions(d)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if len(exprs) < 5 {
			t.Fatalf("%s: only %d expressions found", f.Name, len(exprs))
		}
		vars := variables(d)
		for where, e := range exprs {
			if err := checkExpr(e, vars, known); err != nil {
				t.Errorf("%s: %s: %v\n  %s", f.Name, where, err, e)
			}
		}
	}
}

// TestCheckExprRejects proves the check can fail.
func TestCheckExprRejects(t *testing.T) {
	known := KnownMetrics()
	vars := map[string]string{"node": "x", "slo": "0.5"}
	for _, tc := range []struct {
		expr, want string
	}{
		{`rate(node_cpu_seconds_total[5m])`, "node_cpu_seconds_total"},
		{`sum(joulemark_gpu_power_watts{node=~"$node"}) +`, "does not parse"},
		{`joulemark_gpu_power_watt`, "joulemark_gpu_power_watt"},
		{`{__name__=~"joulemark_.*"}`, "no metric name"},
		{`joulemark_gpu_power_watts{gpu="$gpu"}`, "undefined dashboard variables [gpu]"},
		{`joulemark_bench_ttft_seconds`, "joulemark_bench_ttft_seconds"}, // a histogram is queried by its series
	} {
		err := checkExpr(tc.expr, vars, known)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkExpr(%q) = %v, want an error containing %q", tc.expr, err, tc.want)
		}
	}
	for _, ok := range []string{
		`histogram_quantile(0.9, sum by (le) (rate(joulemark_bench_ttft_seconds_bucket[$__rate_interval])))`,
		`vllm:num_requests_running{node=~"$node"} > $slo`,
	} {
		if err := checkExpr(ok, vars, known); err != nil {
			t.Errorf("checkExpr(%q) = %v, want nil", ok, err)
		}
	}
}

func TestRecordingRulesParsed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yml", "groups:\n- name: g\n  rules:\n  - record: job:x:sum\n    expr: sum(up)\n  - alert: Down\n    expr: up == 0\n")
	write("a_test.yml", "rule_files: [a.yml]\ntests: []\n")
	got, err := recordingRules(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names := mapsKeys(got); !slices.Equal(names, []string{"job:x:sum"}) {
		t.Errorf("recording rules = %v, want [job:x:sum]", names)
	}
	write("bad.yml", "groups:\n- name: g\n  rules:\n  - record: x\n    expr: sum(\n")
	if _, err := recordingRules(dir); err == nil || !strings.Contains(err.Error(), "bad.yml") {
		t.Errorf("bad rule file: err = %v, want one naming bad.yml", err)
	}
}

func mapsKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// KnownMetrics returns every metric name the dashboards may query outside
// the recording rules, with the series names of histograms
// (_bucket, _sum, _count) expanded.
func KnownMetrics() map[string]bool {
	known := map[string]bool{}
	for _, m := range contract.Metrics {
		known[m] = true
	}
	// A histogram is queried through its series, never its bare name.
	for _, m := range contract.BenchAggregates {
		delete(known, m.Name)
	}
	add := func(name, typ string) {
		if typ == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[name+s] = true
			}
			return
		}
		known[name] = true
	}
	for _, m := range contract.BenchAggregates {
		add(m.Name, m.Type)
	}
	for _, m := range contract.EngineMetrics {
		add(m.Name, m.Type)
	}
	return known
}
