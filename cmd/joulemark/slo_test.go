package main

import (
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/dashboards"
	"github.com/joulemark/joulemark/rules"
)

// TestOneSLODefault: the TTFT and TPOT SLO defaults are one value each in
// analyze, the demo and analyze flags, the dashboards' SLO variables and
// the recording rules' bucket edges.
func TestOneSLODefault(t *testing.T) {
	p := analyze.DefaultParams()
	rec, err := rules.File("recording.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field, variable, bucket string
		want                    time.Duration
	}{
		{"SLOTTFT", "slo_ttft", "joulemark_bench_ttft_seconds_bucket", p.SLOTTFT},
		{"SLOTPOT", "slo_tpot", "joulemark_bench_tpot_seconds_bucket", p.SLOTPOT},
	} {
		for _, cmd := range []any{AnalyzeCmd{}, DemoCmd{}} {
			f, ok := reflect.TypeOf(cmd).FieldByName(tc.field)
			if !ok {
				t.Fatalf("%T has no %s", cmd, tc.field)
			}
			if d, err := time.ParseDuration(f.Tag.Get("default")); err != nil || d != tc.want {
				t.Errorf("%T --%s default %q, analyze's is %v", cmd, f.Tag.Get("name"), f.Tag.Get("default"), tc.want)
			}
		}
		for _, file := range []string{"benchmark-run.json", "sweep-comparison.json"} {
			defs, err := dashboards.Defaults(file)
			if err != nil {
				t.Fatal(err)
			}
			if s, err := strconv.ParseFloat(defs[tc.variable], 64); err != nil || s != tc.want.Seconds() {
				t.Errorf("%s: $%s defaults to %q, analyze's is %v", file, tc.variable, defs[tc.variable], tc.want)
			}
		}
		le := regexp.MustCompile(tc.bucket+`\{[^}]*le="([0-9.]+)"`).FindAllSubmatch(rec, -1)
		if len(le) == 0 {
			t.Errorf("rules/recording.yml reads no %s", tc.bucket)
		}
		for _, m := range le {
			if s, _ := strconv.ParseFloat(string(m[1]), 64); s != tc.want.Seconds() {
				t.Errorf("rules/recording.yml: %s le=%s, analyze's SLO is %v", tc.bucket, m[1], tc.want)
			}
		}
	}
}
