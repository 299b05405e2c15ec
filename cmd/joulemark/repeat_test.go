package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/report"
)

// `bench --repeat 2` against the simulated engine and an exporter over
// simulated GPUs: two lifecycles, two archived runs <id>-rep1 and -rep2,
// one repetition group in their identity; a second bench with the same id
// is refused before anything starts and overwrites nothing.
func TestBenchRepeat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := simengine.DefaultConfig()
	cfg.Model, cfg.MaxModelLen, cfg.MaxBatch, cfg.KVCacheTokens = "sim-model", 4096, 16, 1<<16
	cfg.PrefillPerToken, cfg.DecodeBase, cfg.DecodePerSeq = 10*time.Microsecond, time.Millisecond, 100*time.Microsecond
	cfg.EOSMeanTokens, cfg.StartupDelay, cfg.ShutdownDelay, cfg.Seed = 0, 0, 0, 42
	eng, err := simengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop(context.Background())
	if err := eng.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	engSrv := httptest.NewServer(eng.Handler(nil))
	defer engSrv.Close()

	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	ecfg := exporter.Defaults()
	ecfg.Backend, ecfg.Interval, ecfg.ReleaseHold, ecfg.ReleaseWindow, ecfg.ReleaseMaxWait, ecfg.APIToken, ecfg.StoragePath =
		sim, 10*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond, 20*time.Second, "tok", ""
	exp, err := exporter.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	exp.Start(ctx)
	defer exp.Close()
	expSrv := httptest.NewServer(exp.Handler())
	defer expSrv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")

	runs := t.TempDir()
	args := []string{"bench", "--target", engSrv.URL + "/v1", "--exporter.url", expSrv.URL,
		"--engine.start", "true", "--engine.stop", "true", "--idle-duration", "200ms", "--warmup-requests", "2",
		"--requests", "20", "--concurrency", "2", "--workload.mean-input-tokens", "32", "--set", "workload.stddev_input_tokens=0",
		"--workload.mean-output-tokens", "8", "--set", "workload.stddev_output_tokens=0", "--runs-dir", runs, "--run-id", "grp", "--repeat", "2"}
	cli := parseCLI(t, args...)
	if err := cli.Bench.Run(ctx, &cli.Globals); err != nil {
		t.Fatalf("bench --repeat 2: %v", err)
	}
	ents, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	if !slices.Equal(ids, []string{"grp-rep1", "grp-rep2"}) {
		t.Fatalf("archives %v, want grp-rep1 grp-rep2", ids)
	}
	for i, id := range ids {
		m, err := (&runarchive.Run{ID: id, Dir: filepath.Join(runs, id)}).ReadManifest()
		if err != nil {
			t.Fatal(err)
		}
		ri := m.RunInfo
		if m.Status != runarchive.StatusCompleted || ri == nil || ri.RunID != id || ri.RepetitionGroup != "grp" || ri.Repetition != i+1 || ri.Repetitions != 2 {
			t.Errorf("%s: status %s run_info %+v, want completed, group grp, repetition %d of 2", id, m.Status, ri, i+1)
		}
	}
	before, _ := os.ReadFile(filepath.Join(runs, "grp-rep1", runarchive.ManifestFile))
	cli = parseCLI(t, args...)
	if err := cli.Bench.Run(ctx, &cli.Globals); err == nil {
		t.Error("a second bench --repeat 2 --run-id grp ran over the first")
	}
	after, _ := os.ReadFile(filepath.Join(runs, "grp-rep1", runarchive.ManifestFile))
	if string(before) != string(after) {
		t.Error("grp-rep1's manifest changed")
	}
}

// pareto pools a repetition group into one point: text names the group
// with its median and range, JSON carries the group summary, CSV keeps a
// row per repetition with the pool's class.
func TestParetoPoolsRepetitions(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, ss := range []float64{0.40, 0.44, 0.60} {
		id := fmt.Sprintf("g-rep%d", i+1)
		rep := report.Report{RunID: id, Valid: true, Run: &report.RunIdentity{RunIdentity: contract.RunIdentity{RunID: id, Model: "m",
			LoadMode: "closed", Concurrency: 8, RepetitionGroup: "g", Repetition: i + 1, Repetitions: 3}}}
		rep.SteadyState.Reached, rep.SteadyState.JoulesPerToken = true, &ss
		rep.Tokens.FormalOutput = 1000
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, id+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := runOut(t, append([]string{"pareto"}, paths...)...)
	if err != nil || !strings.Contains(out, "0.44 (0.4–0.6)") || !strings.Contains(out, "3 valid of 3 repetitions") || strings.Contains(out, "g-rep1") {
		t.Errorf("pareto text (%v):\n%s", err, out)
	}
	out, err = runOut(t, append([]string{"pareto", "--format", "json"}, paths...)...)
	if err != nil || !strings.Contains(out, `"run_id": "g"`) || !strings.Contains(out, `"verdict": "disagree`) {
		t.Errorf("pareto json (%v):\n%s", err, out)
	}
	out, err = runOut(t, append([]string{"pareto", "--format", "csv"}, paths...)...)
	header, rows := csvtest.Rows(t, out)
	col := slices.Index(header, "pareto.repetition_group")
	if err != nil || len(rows) != 3 || col < 0 || rows[2][col] != "g" || rows[2][0] != "1" {
		t.Errorf("pareto csv (%v): %v %v", err, header, rows)
	}
}
