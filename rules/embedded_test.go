package rules_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/promwait"
	"github.com/joulemark/joulemark/rules"
)

// TestEmbeddedRules loads joulemark's own rule files into the embedded
// Prometheus (internal/promserver) as the demo does and sees one of them
// evaluated into the TSDB.
func TestEmbeddedRules(t *testing.T) {
	var srcs []promserver.RuleSource
	for _, n := range rules.FileNames {
		b, err := rules.File(n)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, promserver.RuleSource{Name: "rules/" + n, YAML: b})
	}
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: t.TempDir(), EvaluationInterval: 100 * time.Millisecond, RuleSources: srcs})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	now := time.Now()
	var samples []remotewrite.Sample
	for gpu := range 2 {
		for i := range 300 {
			samples = append(samples, remotewrite.Sample{
				Labels:      map[string]string{"__name__": "joulemark_gpu_power_watts", "gpu": fmt.Sprint(gpu), "instance": "node-a:9400"},
				Value:       250,
				TimestampMs: now.Add(time.Duration(i) * time.Second).UnixMilli(),
			})
		}
	}
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	c, err := api.NewClient(api.Config{Address: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	p := v1.NewAPI(c)
	promwait.Value(t, p, `joulemark:gpu_power_watts:sum`, "500", 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rr, err := p.Rules(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, g := range rr.Groups {
		n += len(g.Rules)
	}
	if want := len(rules.RecordingRuleNames) + len(rules.AlertNames); n != want {
		t.Errorf("/api/v1/rules lists %d rules, want %d", n, want)
	}
}
