package main

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alecthomas/kong"

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
	_, parser := testParser(t)
	for _, tc := range []struct {
		flag, variable, bucket string
		want                   time.Duration
	}{
		{"slo.ttft", "slo_ttft", "joulemark_bench_ttft_seconds_bucket", p.SLOTTFT},
		{"slo.tpot", "slo_tpot", "joulemark_bench_tpot_seconds_bucket", p.SLOTPOT},
	} {
		for _, cmd := range []string{"analyze run", "demo"} {
			n := findCommand(parser.Model.Node, cmd)
			i := slices.IndexFunc(n.Flags, func(f *kong.Flag) bool { return f.Name == tc.flag })
			if i < 0 {
				t.Fatalf("joulemark %s has no --%s", cmd, tc.flag)
			}
			if d, err := time.ParseDuration(n.Flags[i].Default); err != nil || d != tc.want {
				t.Errorf("joulemark %s --%s default %q, analyze's is %v", cmd, tc.flag, n.Flags[i].Default, tc.want)
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
