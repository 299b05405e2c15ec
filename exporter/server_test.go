package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/prompb"
	"golang.org/x/crypto/bcrypt"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

func waitUp(t *testing.T, url string) {
	t.Helper()
	for range 1000 { // 10 s at most
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never came up", url)
}

// TestServeWebConfig runs the real server loop with an exporter-toolkit web
// config (basic auth on every endpoint) and shuts it down through ctx.
func TestServeWebConfig(t *testing.T) {
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 2})
	e, err := newExp(Config{Backend: sim, APIToken: testToken, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, "basic_auth_users:\n  prom: %s\n", hash), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := testnet.FreeAddr(t)
	e.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, addr, cfgFile) }()
	base := "http://" + addr
	waitUp(t, base+"/healthz")
	get := func(path, user string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if user != "" {
			req.SetBasicAuth(user, "pw")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{"/metrics", "/api/v1/gpus", "/healthz", "/-/ready"} {
		if c := get(p, ""); c != http.StatusUnauthorized {
			t.Errorf("%s without basic auth: %d, want 401", p, c)
		}
		if c := get(p, "prom"); c != http.StatusOK {
			t.Errorf("%s with basic auth: %d, want 200", p, c)
		}
	}
	// the phase API behind basic auth: the token travels in its own header
	hc, err := config.NewClientFromConfig(config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "prom", Password: "pw"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := phaseapi.NewClient(base, testToken, hc)
	if _, err := cl.WithTokenHeader().StartPhase(ctx, "r", contract.Idle); err != nil {
		t.Errorf("phase through basic auth with the token header: %v", err)
	}
	nok, _ := phaseapi.NewClient(base, "wrong", hc)
	if _, err := nok.WithTokenHeader().StartPhase(ctx, "r", contract.Startup); !phaseapi.IsStatus(err, 401) {
		t.Errorf("wrong token through basic auth: %v, want 401", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}
}

func TestServeBadWebConfig(t *testing.T) {
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 1})
	e, _ := newExp(Config{Backend: sim})
	defer e.Close()
	bad := filepath.Join(t.TempDir(), "web.yml")
	os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent.pem\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.Serve(ctx, testnet.FreeAddr(t), bad)
	if err == nil {
		t.Fatal("Serve accepted a web config with a missing certificate")
	}
}

// TestStartSamplesInRealTime runs the sampling loops on the real clock at
// 10 ms for a moment.
func TestStartSamplesInRealTime(t *testing.T) {
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 2})
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond, SlowInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background())
	time.Sleep(300 * time.Millisecond)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e.mu.RLock()
	n, slow := e.gpus[1].samples, e.gpus[1].hasSlow
	e.mu.RUnlock()
	if n < 5 || !slow {
		t.Errorf("after 300 ms at 10 ms: %d samples, slow sample %v", n, slow)
	}
	if e.gpus[1].energy <= 0 {
		t.Error("no energy integrated")
	}
}

// rwReceiver decodes remote-write requests.
type rwReceiver struct {
	mu  sync.Mutex
	got []prompb.TimeSeries
}

func (r *rwReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, wr.Timeseries...)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func TestRemoteWriteRawSamples(t *testing.T) {
	rec := &rwReceiver{}
	srv := newHTTPServer(t, rec)
	clk := newFakeClock()
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 2, Clock: clk, NoiseWatts: 1})
	e, err := newExp(Config{Backend: sim, Clock: clk,
		RemoteWrite:       &remotewrite.Config{URL: srv + "/api/v1/write", FlushInterval: 10 * time.Millisecond},
		RemoteWriteLabels: map[string]string{"instance": "node-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for range 20 {
		clk.Advance(100 * time.Millisecond)
		e.SampleOnce()
		want = append(want, sim.PowerAt(1, clk.Now()))
	}
	if err := e.Close(); err != nil { // flushes
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got, energy []prompb.Sample
	for _, ts := range rec.got {
		lbl := map[string]string{}
		for _, l := range ts.Labels {
			lbl[l.Name] = l.Value
		}
		if (lbl["__name__"] != contract.GPUPowerSample && lbl["__name__"] != contract.GPUEnergySample) || lbl["instance"] != "node-1" || lbl["uuid"] == "" {
			t.Errorf("series labels %v", lbl)
		}
		if lbl["gpu"] == "1" && lbl["__name__"] == contract.GPUPowerSample {
			got = append(got, ts.Samples...)
		}
		if lbl["gpu"] == "1" && lbl["__name__"] == contract.GPUEnergySample {
			energy = append(energy, ts.Samples...)
		}
	}
	if len(got) != 20 || len(energy) != 20 {
		t.Fatalf("%d power and %d energy samples of gpu 1 received, want 20 of each", len(got), len(energy))
	}
	for k := 1; k < len(energy); k++ {
		if energy[k].Timestamp != got[k].Timestamp || energy[k].Value <= energy[k-1].Value {
			t.Errorf("energy sample %d: %v @ %d after %v: want a growing counter at the power sample's timestamp %d", k, energy[k].Value, energy[k].Timestamp, energy[k-1].Value, got[k].Timestamp)
		}
	}
	start := clk.Now().Add(-2 * time.Second)
	for k, s := range got {
		wantTs := start.Add(time.Duration(k+1) * 100 * time.Millisecond).UnixMilli()
		if s.Timestamp != wantTs || s.Value != want[k] {
			t.Errorf("sample %d: %v @ %d, want %v @ %d", k, s.Value, s.Timestamp, want[k], wantTs)
		}
	}
}

func TestRemoteWriteDropsAreCounted(t *testing.T) {
	clk := newFakeClock()
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 1, Clock: clk})
	// nothing listens there; a 5-sample buffer overflows at once (each tick
	// pushes a power and an energy sample: 24 in all, 19 dropped)
	e, err := newExp(Config{Backend: sim, Clock: clk, RemoteWrite: &remotewrite.Config{
		URL: "http://127.0.0.1:1/api/v1/write", BufferSize: 5, BatchSize: 100, FlushInterval: time.Hour, MaxElapsed: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for range 12 {
		clk.Advance(100 * time.Millisecond)
		e.SampleOnce()
	}
	m := fetchMetricsHandler(t, e)
	if !strings.Contains(m, "joulemark_remote_write_samples_dropped_total 19") {
		t.Errorf("dropped samples not counted:\n%s", grepLines(m, "remote_write"))
	}
	if err := e.Close(); err == nil {
		t.Error("Close hid the lost samples")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func newHTTPServer(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}
