package benchjob

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
)

// TestRunAgainstExporterAndPrometheus runs the whole lifecycle against the
// real exporter (simulated GPUs) and the embedded Prometheus (TSDB and
// remote-write receiver), then reads every per-request sample back through
// the Prometheus HTTP API.
func TestRunAgainstExporterAndPrometheus(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, expSrv := startSimExporter(t, sim)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	prom, err := promserver.Start(ctx, promserver.Options{Dir: t.TempDir(), ListenAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Close()

	srv := openaitest.New(openaitest.Behavior{TokenDelay: time.Millisecond})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{expSrv.URL}
	cfg.RemoteWrite.URL = prom.RemoteWriteURL()
	cfg.IdleDuration = 300 * time.Millisecond
	cfg.Requests = 30
	cfg.Concurrency = 3
	cfg.RunID = "integration-1"
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	res, err := Run(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != runarchive.StatusCompleted || len(flagsBesidesLoad(res.Flags)) != 0 {
		t.Errorf("status %s flags %v", res.Status, res.Flags)
	}
	st := res.Release[expSrv.URL]
	if st == nil || st.Release.State != phaseapi.ReleaseClosed || len(st.Phases) != 5 {
		t.Fatalf("exporter status %+v", st)
	}
	for i, p := range contract.Phases {
		if st.Phases[i].Phase != p {
			t.Errorf("exporter phase %d = %s, want %s", i, st.Phases[i].Phase, p)
		}
	}
	if res.RemoteWrite.Lost() != 0 || res.RemoteWrite.Acknowledged == 0 {
		t.Fatalf("remote write %+v", res.RemoteWrite)
	}

	// Every per-request sample, read back from Prometheus, at its end time.
	_, recs := readRecords(t, res.ArchiveDir)
	cl, err := api.NewClient(api.Config{Address: prom.URL()})
	if err != nil {
		t.Fatal(err)
	}
	papi := promv1.NewAPI(cl)
	for _, metric := range []string{contract.RequestLatency, contract.RequestOutputTokens, contract.RequestSuccess} {
		checkSamplesInPrometheus(ctx, t, papi, metric, recs)
	}
	v, _, _, err := papi.Query(ctx, `sum(joulemark_bench_requests_total{run_id="integration-1"})`, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || float64(vec[0].Value) != float64(len(recs)) {
		t.Errorf("requests_total: %v", v)
	}
}

// checkSamplesInPrometheus: every request's sample of metric, read back
// from Prometheus, at its end time (latency: its value too).
func checkSamplesInPrometheus(ctx context.Context, t *testing.T, papi promv1.API, metric string, recs []runarchive.Request) {
	t.Helper()
	q := fmt.Sprintf(`%s{run_id="integration-1"}[1h]`, metric)
	v, _, _, err := papi.Query(ctx, q, time.Now())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		t.Fatalf("%s: %T", q, v)
	}
	got := map[string]float64{}
	n := 0
	for _, ser := range m {
		for _, p := range ser.Values {
			got[fmt.Sprintf("%s/%s/%d", ser.Metric["phase"], ser.Metric["slot"], int64(p.Timestamp))] = float64(p.Value)
			n++
		}
	}
	if n != len(recs) {
		t.Fatalf("%s: %d samples in Prometheus, %d requests", metric, n, len(recs))
	}
	for _, r := range recs {
		ms := int64(math.Floor(r.EndTime * 1000))
		found := false
		for _, d := range []int64{0, -1, 1} {
			if v, ok := got[fmt.Sprintf("%s/%s/%d", r.Phase, strconv.Itoa(r.Slot), ms+d)]; ok {
				found = true
				if metric == contract.RequestLatency && math.Abs(v-r.LatencySeconds) > 1e-9 {
					t.Errorf("latency %g, archive %g", v, r.LatencySeconds)
				}
			}
		}
		if !found {
			t.Errorf("%s: no sample for %s slot %d at %d ms", metric, r.Phase, r.Slot, ms)
		}
	}
}

// TestRunRealPrometheusInOrder writes a run's samples to Debian's
// prometheus with no out-of-order window: every per-request sample must be
// accepted (no series gets a sample older than its last, none twice at one
// timestamp), and the counts read back match the archive.
func TestRunRealPrometheusInOrder(t *testing.T) {
	prom := realprom.Start(t, "global:\n  scrape_interval: 1s\n")
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Concurrency = 8
	cfg.Requests = 400
	cfg.RemoteWrite.URL = prom.URL + "/api/v1/write"
	cfg.RunID = "realprom-1"
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.RemoteWrite.Lost() != 0 || slices.Contains(res.Flags, contract.FlagRemoteWriteLost) {
		t.Fatalf("remote write %+v flags %v\n%s", res.RemoteWrite, res.Flags, prom.Log())
	}
	cl, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	v, _, _, err := promv1.NewAPI(cl).Query(context.Background(),
		`sum(count_over_time(joulemark_request_success{run_id="realprom-1"}[1h]))`, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || int(vec[0].Value) != 402 {
		t.Errorf("samples in Prometheus: %v, want 402", v)
	}
}
