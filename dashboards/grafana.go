package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/joulemark/joulemark/internal/contract"
)

// SlowestProducer is the longest interval at which a series the dashboards
// rate() arrives in Prometheus: the bench job pushes its aggregates every
// 5 s (remote_write.aggregate_interval) and deploy/prometheus scrapes the
// engines every 5 s. Every query that rates such a series sets it as its
// Min step, so Grafana's $__rate_interval (max($__interval + min step,
// 4 × min step)) spans four of their samples whatever the data source's
// scrape interval (docs/deploy.md sets 1 s, for the exporter's panels).
const SlowestProducer = 5 * time.Second

// slowPrefixes name the series that arrive every SlowestProducer.
var slowPrefixes = func() []string {
	out := []string{"joulemark_bench_"}
	for _, e := range contract.Engines {
		out = append(out, e+":")
	}
	return out
}()

// minStep is the Min step a query needs: SlowestProducer when it rates a
// slow series over $__rate_interval, else none (the data source's).
func minStep(expr string) string {
	if !strings.Contains(expr, "$__rate_interval") {
		return ""
	}
	for _, p := range slowPrefixes {
		if strings.Contains(expr, p) {
			return promDuration(SlowestProducer)
		}
	}
	return ""
}

// promDuration formats d as a Prometheus duration ("5s", "1m").
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// Target is one PromQL expression of a generated dashboard.
type Target struct {
	Dashboard string        // file name, e.g. benchmark-run.json
	Where     string        // `panel "Title" query A`, "annotation Name" or "variable name"
	Panel     string        // panel title; "" for annotations and variables
	Expr      string        // with Grafana variables
	Instant   bool          // one value at the end of the range
	MinStep   time.Duration // the query's Min step; 0: the data source's
}

// Targets returns every PromQL expression of every dashboard: panel
// queries, annotations, and the selectors of label_values variables.
func Targets() ([]Target, error) {
	var out []Target
	for _, def := range definitions {
		d, err := def.build()
		if err != nil {
			return nil, fmt.Errorf("building dashboard %s: %w", def.name, err)
		}
		ts, err := targets(def.name, d)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

func targets(file string, d dashboard.Dashboard) ([]Target, error) {
	var out []Target
	for _, p := range allPanels(d) {
		title := ""
		if p.Title != nil {
			title = *p.Title
		}
		for i, q := range p.Targets {
			var pq *prometheus.Dataquery
			switch v := q.(type) {
			case *prometheus.Dataquery:
				pq = v
			case prometheus.Dataquery:
				pq = &v
			}
			if pq == nil || pq.RefId == nil {
				return nil, fmt.Errorf("%s: panel %q target %d: %T is not a Prometheus query with a refId", file, title, i, q)
			}
			t := Target{Dashboard: file, Where: fmt.Sprintf("panel %q query %s", title, *pq.RefId), Panel: title,
				Expr: pq.Expr, Instant: pq.Instant != nil && *pq.Instant}
			if pq.Interval != nil {
				step, err := time.ParseDuration(*pq.Interval)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: min step %q: %w", file, t.Where, *pq.Interval, err)
				}
				t.MinStep = step
			}
			out = append(out, t)
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != nil {
			out = append(out, Target{Dashboard: file, Where: "annotation " + a.Name, Expr: *a.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		if v.Query == nil || v.Query.String == nil {
			return nil, fmt.Errorf("%s: variable %s: no query", file, v.Name)
		}
		m := labelValuesQuery.FindStringSubmatch(*v.Query.String)
		if m == nil {
			return nil, fmt.Errorf("%s: variable %s: query %q is not label_values(selector, label)", file, v.Name, *v.Query.String)
		}
		out = append(out, Target{Dashboard: file, Where: "variable " + v.Name, Expr: m[1], Instant: true})
	}
	return out, nil
}

// allPanels returns every non-row panel of d, rows' nested panels included.
func allPanels(d dashboard.Dashboard) []dashboard.Panel {
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

// Defaults returns the default value of each text-box variable of the
// dashboard file (the SLO thresholds).
func Defaults(file string) (map[string]string, error) {
	for _, def := range definitions {
		if def.name != file {
			continue
		}
		d, err := def.build()
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, v := range d.Templating.List {
			if v.Type == "textbox" && v.Query != nil && v.Query.String != nil {
				out[v.Name] = *v.Query.String
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no dashboard %s", file)
}

// View is what Grafana evaluates a query over: a time range, the panel's
// maximum data points and the data source's scrape interval (timeInterval).
type View struct {
	From, To           time.Time
	MaxDataPoints      int
	DataSourceInterval time.Duration
}

// Intervals returns $__interval (the range query's step) and
// $__rate_interval for a query with the given Min step, as Grafana's
// Prometheus data source computes them: the interval is range /
// MaxDataPoints, rounded up to a whole second (Grafana rounds to its own
// table; only ranges longer than MaxDataPoints seconds reach it), and never
// below the Min step, or the data source's interval when the query has none;
// the rate interval is max(interval + scrape, 4 × scrape), with scrape the
// Min step when set, else the data source's interval.
func (v View) Intervals(minStep time.Duration) (interval, rate time.Duration) {
	scrape := v.DataSourceInterval
	if minStep > 0 {
		scrape = minStep
	}
	interval = v.To.Sub(v.From) / time.Duration(max(v.MaxDataPoints, 1))
	interval = (interval + time.Second - 1).Truncate(time.Second)
	interval = max(interval, scrape)
	return interval, max(interval+scrape, 4*scrape)
}

var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// Expand replaces the Grafana variables of t's expression: the built-in
// intervals by v's, the others by vars (a missing one is an error). It
// returns the expression and the step of its range query.
func (t Target) Expand(v View, vars map[string]string) (string, time.Duration, error) {
	interval, rate := v.Intervals(t.MinStep)
	builtin := map[string]string{
		"__interval":      promDuration(interval),
		"__rate_interval": promDuration(rate),
		"__range":         promDuration(v.To.Sub(v.From).Round(time.Second)),
	}
	var missing []string
	out := grafanaVariable.ReplaceAllStringFunc(t.Expr, func(m string) string {
		name := grafanaVariable.FindStringSubmatch(m)[1]
		if s, ok := builtin[name]; ok {
			return s
		}
		if s, ok := vars[name]; ok {
			return s
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		return "", 0, fmt.Errorf("%s: %s: no value for variables %v", t.Dashboard, t.Where, missing)
	}
	return out, interval, nil
}
