package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

// TestExporterAndPhaseCommands runs `joulemark exporter --gpu=sim` in
// process and drives a lifecycle with `joulemark phase`.
func TestExporterAndPhaseCommands(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("cli-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testnet.FreeAddr(t)
	cli := parseCLI(t, "exporter", "--gpu=sim", "--gpus=2", "--sample.interval=20ms", "--web.listen-address="+addr,
		"--web.api-token-file="+tokenFile, "--release.hold=300ms", "--release.max-wait=20s", "--storage.path="+filepath.Join(dir, "data"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cli.Exporter.run(ctx, slog.New(slog.DiscardHandler)) }()
	base := "http://" + addr
	waitReady(t, base, done)
	phase := func(args ...string) error {
		pc := parseCLI(t, append([]string{"phase"}, args...)...)
		return pc.Phase.Run(context.Background(), &pc.Globals)
	}
	for _, p := range []string{"idle", "startup", "release"} {
		if err := phase("r1", p, "--exporter.url", base, "--exporter.bearer-token-file", tokenFile); err != nil {
			t.Fatalf("phase %s: %v", p, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := phase("r1", "warmup", "--exporter.url", base, "--exporter.bearer-token-file", tokenFile); !phaseapi.IsStatus(err, http.StatusConflict) {
		t.Errorf("out-of-order phase through the CLI: %v, want a 409", err)
	}
	if err := phase("r1", "bogus", "--exporter.url", base, "--exporter.bearer-token-file", tokenFile); err == nil || !strings.Contains(err.Error(), "unknown phase") {
		t.Errorf("bogus phase: %v", err)
	}
	t.Setenv("JOULEMARK_API_TOKEN", "")
	if err := phase("r1", "end", "--exporter.url", base); err == nil || !strings.Contains(err.Error(), "no API token") {
		t.Errorf("no token: %v", err)
	}
	t.Setenv("JOULEMARK_API_TOKEN", "wrong")
	if err := phase("r2", "idle", "--exporter.url", base); !phaseapi.IsStatus(err, http.StatusUnauthorized) {
		t.Errorf("wrong token from the environment: %v, want 401", err)
	}

	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	cl, _ := phaseapi.NewClient(base, "", nil)
	st, err := cl.WaitRelease(wctx, "r1", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.Release.State != phaseapi.ReleaseClosed {
		t.Errorf("release %+v, want closed (idle power throughout)", st.Release)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`joulemark_run_release_closed{run_id="r1"} 1`, `joulemark_gpu_info{driver_version="sim"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), "cli-test-token-0123456789") {
		t.Error("the token reached /metrics")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exporter after shutdown: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("exporter did not shut down")
	}
}

func TestExporterCommandErrors(t *testing.T) {
	shortToken := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(shortToken, []byte("fifteen-bytes-x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exporter", "--gpu=sim", "--sample.interval=1ms"}, "--sample.interval=1ms: want at least 10ms"},
		{[]string{"exporter", "--gpu=sim", "--web.api-token-file=" + emptyFile(t)}, "--web.api-token-file"},
		{[]string{"exporter", "--gpu=sim", "--sim.max-watts=10"}, "max power"},
		{[]string{"exporter", "--gpu=nvml", "--sim.engine-url=http://x:1"}, "--gpu=sim"},
		{[]string{"exporter", "--gpu=sim", "--release.hold=20m"}, "--release.hold=20m0s: want at most the sample retention"},
		{[]string{"exporter", "--gpu=sim", "--web.api-token-file=" + shortToken}, "want at least 16"},
	} {
		cli, p := testParser(t)
		_, err := p.Parse(tc.args) // a setting out of range: refused here
		if err == nil {
			err = cli.Exporter.run(context.Background(), slog.New(slog.DiscardHandler))
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestExporterSimAllocations: --sim.allocations serves simulated pods from
// an in-process fake kubelet; the exporter attributes energy to them and a
// phase --engine.pod selects the pod's GPUs.
func TestExporterSimAllocations(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("cli-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testnet.FreeAddr(t)
	cli := parseCLI(t, "exporter", "--gpu=sim", "--gpus=3", "--sample.interval=20ms", "--web.listen-address="+addr,
		"--web.api-token-file="+tokenFile, "--storage.path="+filepath.Join(dir, "data"),
		"--sim.allocations=serve/a=0,2;serve/b=1", "--kubelet.refresh-interval=100ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cli.Exporter.run(ctx, slog.New(slog.DiscardHandler)) }()
	base := "http://" + addr
	var body string
	for i := 0; ; i++ {
		if resp, err := http.Get(base + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The sample line, not the HELP text ("joulemark_kubelet_up 1
			// when the last read ... succeeded"), which every scrape
			// serves from the first one on.
			if body = string(b); strings.Contains(body, "\njoulemark_kubelet_up 1\n") {
				break
			}
		}
		if i > 500 {
			t.Fatalf("the fake kubelet was never read:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`joulemark_gpu_allocation_info{container="engine",gpu="2",namespace="serve",pod="a",resource="nvidia.com/gpu",shared="false"`,
		`joulemark_gpu_allocation_info{container="engine",gpu="1",namespace="serve",pod="b"`,
		`joulemark_pod_energy_joules_total{container="engine",namespace="serve",pod="a"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	pc := parseCLI(t, "phase", "r1", "idle", "--exporter.url", base, "--exporter.bearer-token-file", tokenFile, "--engine.pod", "serve/a")
	if err := pc.Phase.Run(context.Background(), &pc.Globals); err != nil {
		t.Fatal(err)
	}
	cl, _ := phaseapi.NewClient(base, "", nil)
	st, err := cl.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GPUs) != 2 || st.GPUs[0].GPU != 0 || st.GPUs[1].GPU != 2 {
		t.Errorf("run r1 measures %+v, want GPUs 0 and 2 (pod serve/a)", st.GPUs)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exporter after shutdown: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("exporter did not shut down")
	}
	for _, tc := range []struct{ arg, want string }{
		{"--sim.allocations=serve/a=7", "not an index below"},
		{"--sim.allocations=a=0", "namespace/pod"},
	} {
		c := parseCLI(t, "exporter", "--gpu=sim", "--gpus=2", tc.arg)
		if err := c.Exporter.run(context.Background(), slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.arg, err, tc.want)
		}
	}
}

func emptyFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestExporterSimEnginePerPod: --sim.engine-url ns/pod=URL drives only the
// GPUs that pod holds.
func TestExporterSimEnginePerPod(t *testing.T) {
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "joulemark_sim_engine_state 2\njoulemark_sim_engine_load_ratio 1\n")
	}))
	defer eng.Close()
	addr := testnet.FreeAddr(t)
	cli := parseCLI(t, "exporter", "--gpu=sim", "--gpus=3", "--sample.interval=20ms", "--web.listen-address="+addr,
		"--storage.path="+filepath.Join(t.TempDir(), "data"), "--sim.ramp-seconds=0.05", "--sim.noise-watts=0",
		"--sim.allocations=serve/a=1;serve/b=2", "--sim.engine-url=serve/a="+eng.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cli.Exporter.run(ctx, slog.New(slog.DiscardHandler)) }()
	power := func(body string, gpu string) float64 {
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `joulemark_gpu_power_watts{gpu="`+gpu+`"`) {
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				return v
			}
		}
		return -1
	}
	var body string
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); power(body, "1") > 600 {
				break
			}
		}
		if i > 500 {
			t.Fatalf("GPU 1 never reached full load:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p0, p2 := power(body, "0"), power(body, "2"); p0 > 80 || p2 > 80 {
		t.Errorf("GPUs 0 and 2 at %.0f W and %.0f W: only pod a's GPU 1 should follow its engine", p0, p2)
	}
	cancel()
	<-done
	for _, tc := range []struct{ args []string }{
		{[]string{"--sim.engine-url=serve/x=" + eng.URL, "--sim.allocations=serve/a=0"}},
		{[]string{"--sim.engine-url=serve/a=" + eng.URL}},
	} {
		c := parseCLI(t, append([]string{"exporter", "--gpu=sim", "--gpus=2"}, tc.args...)...)
		if err := c.Exporter.run(context.Background(), slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--sim.") {
			t.Errorf("%v: %v, want an error naming the flag", tc.args, err)
		}
	}
}
