package exporter

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
)

// TestRemoteWriteIntoPrometheus pushes raw samples into a real Prometheus
// (Debian's 2.42 in CI) started with its remote-write receiver, and reads
// them back with their own timestamps.
func TestRemoteWriteIntoPrometheus(t *testing.T) {
	base := realprom.Start(t, "global:\n  scrape_interval: 1m\n").URL

	clk := fakeclock.At(time.Now().Add(-time.Minute).Truncate(time.Second))
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 2, Clock: clk, NoiseWatts: 1})
	e, err := newExp(Config{Backend: sim, Clock: clk,
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
	n, ok := queryValue(t, base, `count_over_time(joulemark_gpu_power_sample_watts{gpu="1",instance="test-node"}[10s])`, last)
	if !ok || n != 30 {
		t.Errorf("Prometheus holds %v samples of gpu 1 (found %v), want 30", n, ok)
	}
}

// queryValue evaluates q at instant at (now when zero) through client_golang's
// query API and returns the single sample's value; ok is false when the
// result is not exactly one sample.
func queryValue(t *testing.T, promURL, q string, at time.Time) (float64, bool) {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: promURL})
	if err != nil {
		t.Fatal(err)
	}
	if at.IsZero() {
		at = time.Now()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	val, _, _, err := promv1.NewAPI(client).Query(ctx, q, at)
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	vec, isVec := val.(model.Vector)
	if !isVec || len(vec) != 1 {
		return 0, false
	}
	return float64(vec[0].Value), true
}
