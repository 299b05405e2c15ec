package exporter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/joulemark/joulemark/gpu"
	"github.com/joulemark/joulemark/internal/fakeclock"
	"github.com/joulemark/joulemark/internal/realprom"
	"github.com/joulemark/joulemark/remotewrite"
)

// TestRemoteWriteIntoPrometheus pushes raw samples into a real Prometheus
// (Debian's 2.42 in CI) started with its remote-write receiver, and reads
// them back with their own timestamps.
func TestRemoteWriteIntoPrometheus(t *testing.T) {
	base := realprom.Start(t, "global:\n  scrape_interval: 1m\n").URL

	clk := fakeclock.At(time.Now().Add(-time.Minute).Truncate(time.Second))
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 2, Clock: clk, NoiseWatts: 1})
	e, err := New(Config{Backend: sim, Clock: clk,
		RemoteWrite:       &remotewrite.Config{URL: base + "/api/v1/write", FlushInterval: 10 * time.Millisecond},
		RemoteWriteLabels: map[string]string{"instance": "test-node"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		clk.Advance(100 * time.Millisecond)
		e.SampleOnce()
	}
	last := clk.Now()
	if err := e.Close(); err != nil {
		t.Fatalf("remote write into Prometheus: %v", err)
	}
	q := url.Values{"query": {`count_over_time(joulemark_gpu_power_sample_watts{gpu="1",instance="test-node"}[10s])`},
		"time": {fmt.Sprintf("%.3f", float64(last.UnixMilli())/1000)}}
	resp, err := http.Get(base + "/api/v1/query?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data.Result) != 1 || out.Data.Result[0].Value[1] != "30" {
		t.Errorf("Prometheus holds %+v samples of gpu 1, want 30", out.Data.Result)
	}
}
