package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// TestAttachedSGLangQueueing is the SRE's everyday measurement on SGLang:
// an engine already serving (sim-engine --dialect sglang, a batch limit of
// 4 under 16 concurrent requests), a real Prometheus scraping it and the
// exporter, bench attached to it (--engine.no-lifecycle), then analyze.
// The report is attached and valid, its server view reads SGLang's names
// as Prometheus stored them, and its diagnosis names the queue.
func TestAttachedSGLangQueueing(t *testing.T) {
	f := newFaultDirs(t)
	f.prom = f.startProm(t, true)
	f.start(t, "--remote-write.url="+f.prom.URL+"/api/v1/write")
	startProcess(t, "engine", nil, f.bin, "sim-engine", "--web.listen-address="+f.engAddr, "--dialect=sglang",
		"--max-num-seqs=4", "--decode-base=3ms", "--decode-per-seq=100us", "--startup-delay=0s", "--seed=1")
	waitHTTP(context.Background(), t, f.engURL+"/health", 20*time.Second)
	pa := promAPI(t, f.prom.URL)
	waitQuery(context.Background(), t, pa, `up{job="inference-engine"} == 1`, 30*time.Second,
		func(v model.Vector) bool { return len(v) == 1 })

	runID := "attached-sglang"
	r := runJoulemark(t, 90*time.Second, f.bin, "bench", "--target="+f.engURL+"/v1", "--concurrency=16", "--duration=12s",
		"--workload.mean-input-tokens=30", "--set=workload.stddev_input_tokens=3", "--workload.mean-output-tokens=16",
		"--set=workload.stddev_output_tokens=2", "--extras.ignore-eos", "--engine.no-lifecycle", "--engine.metrics",
		"--exporter.url="+f.expURL, "--exporter.bearer-token-file="+f.tokenFile,
		"--remote-write.url="+f.prom.URL+"/api/v1/write", "--runs-dir="+f.runsDir, "--run-id="+runID)
	if r.code != 0 {
		t.Fatalf("bench exit %d\n%s", r.code, tail(r.stderr, 4000))
	}
	st, err := f.client(t).Run(context.Background(), runID)
	if err != nil || len(st.Phases) == 0 || st.Phases[len(st.Phases)-1].End == nil {
		t.Fatalf("exporter run %s: %+v, %v", runID, st, err)
	}
	end := *st.Phases[len(st.Phases)-1].End
	// Prometheus scraped the engine and the exporter past the formal end.
	for _, q := range []string{`min(timestamp(joulemark_gpu_energy_joules_total))`, `min(timestamp(sglang:num_queue_reqs))`} {
		waitQuery(context.Background(), t, pa, q, 20*time.Second, func(v model.Vector) bool { return len(v) == 1 && float64(v[0].Value) >= end+2 })
	}

	out := filepath.Join(f.dir, "report")
	a := runJoulemark(t, 60*time.Second, f.bin, "analyze", "--prometheus.url="+f.prom.URL, "--run-id="+runID,
		"--runs-dir="+f.runsDir, "--out="+out, "--slo.ttft=500ms",
		// 16-token answers four at a time: per-request J/token spreads
		// more than the method's 3 % in windows of 100 (3.1 % measured).
		"--steady-state.cv=0.05")
	rep := readReport(t, filepath.Join(out, report.FileJSON))
	sv, dg := rep.Server, rep.Diagnosis
	t.Logf("analyze exit %d, valid %v, flags %v; server %s %v; findings %+v", a.code, rep.Valid, flagCodes(rep), sv.Engine, sv.MetricsFound, dg.Findings)
	if a.code != 0 || !rep.Valid || rep.Run == nil || rep.Run.Mode != contract.ModeAttached {
		t.Errorf("analyze exit %d, valid %v (excluding %v), run %+v: want a valid attached report", a.code, rep.Valid, excludingCodes(rep), rep.Run)
	}
	want := map[string]string{"running": "sglang:num_running_reqs", "waiting": "sglang:num_queue_reqs",
		"kv_cache": "sglang:token_usage", "preemptions": "sglang:num_retracted_requests_total"}
	for role, name := range want {
		if sv.MetricsFound[role] != name {
			t.Errorf("server view %s: %q, want %q (found %v)", role, sv.MetricsFound[role], name, sv.MetricsFound)
		}
	}
	var rules []string
	for _, fd := range dg.Findings {
		rules = append(rules, fd.Rule)
		if err := fd.CheckThresholds(); err != nil {
			t.Error(err)
		}
	}
	if !sv.Available || sv.Engine != "sglang" || !slices.Equal(rules, []string{report.RuleQueueing}) {
		t.Errorf("server view available %v engine %q, findings %v: want SGLang's and queueing alone (%s)",
			sv.Available, sv.Engine, rules, fmt.Sprint(dg.Skipped))
	}
}
