package benchjob

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

func TestPercentiles(t *testing.T) {
	v := make([]float64, 0, 100)
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	p := percentiles(v)
	if p.N != 100 || *p.P50 != 50 || *p.P90 != 90 || *p.P95 != 95 || *p.P99 != 99 {
		t.Errorf("%+v", p)
	}
	if p := percentiles([]float64{7}); *p.P50 != 7 || *p.P99 != 7 {
		t.Errorf("one value: %+v", p)
	}
	if p := percentiles(nil); p.N != 0 || p.P99 != nil {
		t.Errorf("none: %+v", p)
	}
}

func summaryFixture() []*runarchive.Request {
	var recs []*runarchive.Request
	for i := 0; i < 10; i++ {
		ttft, tpot := 0.1*float64(i+1), 0.01*float64(i+1)
		r := &runarchive.Request{Phase: "formal", SendTime: 1000 + float64(i), EndTime: 1001 + float64(i), LatencySeconds: 1 + 0.1*float64(i),
			TTFTSeconds: &ttft, TPOTSeconds: &tpot, OutputTokens: 100, InputTokens: 50, TokensSource: runarchive.TokensUsage, Success: true, OutputChars: new(400)}
		if i == 3 {
			r.OutputChars = new(0)
		}
		if i >= 8 {
			r.Success, r.ErrorClass, r.TTFTSeconds, r.TPOTSeconds, r.OutputTokens = false, "timeout_total", nil, nil, 0
			r.LatencySeconds = 5
		}
		recs = append(recs, r)
	}
	return recs
}

func TestSummarize(t *testing.T) {
	s := summarize(summaryFixture())
	if s.Started != 10 || s.Succeeded != 8 || s.Failed != 2 || s.ErrorRate != 0.2 || s.Errors["timeout_total"] != 2 {
		t.Errorf("counts %+v", s)
	}
	if s.OutputTokens != 800 || s.InputTokens != 400 || s.EmptyOutputs != 1 || s.TokensSource[runarchive.TokensUsage] != 8 {
		t.Errorf("tokens %+v", s)
	}
	if s.DurationSeconds != 10 || s.RequestsPerSecond != 1 || s.OutputTokensPerSecond != 80 {
		t.Errorf("rates %+v", s)
	}
	// Failures count as infinitely slow in every percentile, as in the
	// report: 2 of 10 failed, so p90 and above land on a failure.
	if s.TTFT.N != 10 || s.Latency.N != 10 || s.Latency.P99 != nil || s.TTFT.P90 != nil || *s.TTFT.P50 != 0.5 || *s.Latency.P50 != 1.4 {
		t.Errorf("percentiles ttft %+v latency %+v", s.TTFT, s.Latency)
	}
}

func TestWriteSummaryGolden(t *testing.T) {
	res := &Result{RunID: "golden-1", ArchiveDir: "runs/golden-1", Status: runarchive.StatusCompleted,
		Flags: []string{contract.FlagUsageMissing}, Summary: summarize(summaryFixture()), TargetRate: 2, AchievedRate: 1.9,
		RemoteWriteURL: "http://prom:9090/api/v1/write", RemoteWrite: remotewrite.Stats{Enqueued: 60, Acknowledged: 55, Failed: 5},
		PrometheusURL: "http://user:secret@prom:9090",
		Release: map[string]*phaseapi.RunStatus{
			"http://b:9402": {Phases: []phaseapi.PhaseStatus{{Phase: contract.Formal, EnergyJoules: 1000}}},
			"http://a:9402": {Phases: []phaseapi.PhaseStatus{{Phase: contract.Idle, EnergyJoules: 700}, {Phase: contract.Formal, EnergyJoules: 278.9}}},
		},
		Start: time.Unix(0, 0), End: time.Unix(10, 0)}
	var b bytes.Buffer
	if err := WriteSummary(&b, res); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "summary.golden", b.Bytes())
	// Error rate comes before the latency figures.
	out := b.String()
	if strings.Index(out, "error rate") > strings.Index(out, "TTFT") {
		t.Error("error rate is not first")
	}
	// The phase energy over both exporters, and the next command without
	// the URL's password.
	for _, want := range []string{"idle 700.0 J · formal 1278.9 J", "joulemark analyze --run-id golden-1 --runs-dir runs --prometheus.url http://user:xxxxx@prom:9090"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestProgressLines(t *testing.T) {
	var b testnet.SyncBuffer
	p := newProgress(&b, nil)
	p.interval = 10 * time.Millisecond
	p.reset("formal", 10)
	p.start()
	p.started.Add(6)
	p.done.Add(5)
	p.errors.Add(1)
	p.tokens.Add(500)
	waitFor(t, func() bool { return strings.Contains(b.String(), "5 done, 1 errors, 1 in flight") })
	p.close()
	if !strings.Contains(b.String(), "[##########..........]") || !strings.Contains(b.String(), "req/s") {
		t.Errorf("progress %q", b.String())
	}
	// Not a terminal: log lines instead.
	var logs bytes.Buffer
	lp := newProgress(nil, slogTo(&logs))
	lp.tty = nil
	lp.interval = 10 * time.Millisecond
	lp.reset("warmup", 0)
	lp.start()
	lp.done.Add(3)
	time.Sleep(50 * time.Millisecond)
	lp.close()
	if !strings.Contains(logs.String(), "msg=progress phase=warmup done=3") {
		t.Errorf("log lines %q", logs.String())
	}
}
