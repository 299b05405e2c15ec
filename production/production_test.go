package production

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/report"
)

// The fixture: 15 s samples from T0-300 s to T0+1800 s; the report covers
// (T0, T0+1800].
//
//	serve/llama-a   vLLM, model llama: 300 W throughout (its counter already
//	                at 1 MJ), 20 tokens/s until T0+1200 then none:
//	                540 000 J, 24 000 tokens, 22.5 J/token, idle-allocated
//	                180 000 J (the last 600 s), share 1/3.
//	serve/llama-b   vLLM, model llama: allocated at T0+600, 200 W, ready
//	                at T0+660 (its engine's first scrape), first token at
//	                T0+885 (seen at the T0+900 scrape), then 10 tokens/s:
//	                240 000 J, 9 150 tokens; startup T0+600..T0+660 =
//	                12 000 J; idle-allocated 45 000 J (ready but no token,
//	                T0+660..T0+885: idle, not startup).
//	serve/mistral   SGLang, model mistral: 100 W, 5 tokens/s; the exporter
//	                restarted at T0+870 (counter back to 0): 180 000 J,
//	                9 000 tokens, 20 J/token.
//	batch/train     400 W, no engine: 720 000 J, no model.
//	unallocated     one GPU at 70 W: 126 000 J.
//
// Per model: llama 2 pods, 780 000 J / 33 150 tokens = 23.529… J/token,
// idle 225 000 J (0.2885), 1 start of 12 000 J; mistral 180 000 J / 9 000
// = 20 J/token. The llama J/token over the last 5 minutes:
// (300·300 + 200·300) J / (10·300) tokens = 50.
const (
	span   = 1800.0
	margin = 300.0
	step   = 15.0
)

type fseries struct {
	labels map[string]string
	from   float64 // first sample, seconds since T0
	v      func(t float64) float64
}

func fixtureSeries() []fseries {
	exp := func(extra map[string]string) map[string]string {
		l := map[string]string{"job": "joulemark-exporter", "instance": "n1:9402", "node": "n1"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	pod := func(name, ns, p string) map[string]string {
		return exp(map[string]string{"__name__": name, "namespace": ns, "pod": p, "container": "engine"})
	}
	alloc := func(ns, p, g string) map[string]string {
		return exp(map[string]string{"__name__": contract.GPUAllocationInfo, "namespace": ns, "pod": p, "container": "engine", "gpu": g, "uuid": "GPU-" + g, "resource": "nvidia.com/gpu", "shared": "false"})
	}
	eng := func(name, p, model string) map[string]string {
		return map[string]string{"__name__": name, "job": "engines", "namespace": "serve", "pod": p, "model_name": model}
	}
	one := func(float64) float64 { return 1 }
	return []fseries{
		{pod(contract.PodEnergy, "serve", "llama-a"), -margin, func(t float64) float64 { return 1e6 + 300*(t+margin) }},
		{eng(mVLLMTokens, "llama-a", "llama"), -margin, func(t float64) float64 { return 5e5 + 20*min(t, 1200) }},
		{alloc("serve", "llama-a", "0"), -margin, one},
		{alloc("serve", "llama-a", "1"), -margin, one},
		{pod(contract.PodEnergy, "serve", "llama-b"), 600, func(t float64) float64 { return 200 * (t - 600) }},
		{eng(mVLLMTokens, "llama-b", "llama"), 660, func(t float64) float64 { return 10 * max(0, t-885) }},
		{alloc("serve", "llama-b", "2"), 600, one},
		{pod(contract.PodEnergy, "serve", "mistral"), -margin, func(t float64) float64 {
			if t <= 870 {
				return 100 * (t + margin)
			}
			return 100 * (t - 870)
		}},
		{eng(mSGLTokens, "mistral", "mistral"), -margin, func(t float64) float64 { return 5 * (t + margin) }},
		{alloc("serve", "mistral", "3"), -margin, one},
		{pod(contract.PodEnergy, "batch", "train"), -margin, func(t float64) float64 { return 400 * (t + margin) }},
		{alloc("batch", "train", "4"), -margin, one},
		{exp(map[string]string{"__name__": contract.UnallocatedEnergy, "gpu": "7", "uuid": "GPU-7"}), -margin, func(t float64) float64 { return 70 * (t + margin) }},
		// one node's GPUs measured board energy, the other's a C2C module
		{exp(map[string]string{"__name__": contract.GPUInfo, "gpu": "0", "uuid": "GPU-0", "energy_scope": "gpu"}), -margin, one},
		{map[string]string{"__name__": contract.GPUInfo, "job": "joulemark-exporter", "instance": "n2:9402", "node": "n2", "gpu": "0", "uuid": "GPU-GH-0", "energy_scope": "module"}, -margin, one},
	}
}

// fixtureData is the fixture as Data, for Compute alone.
func fixtureData(t0 float64) *Data { return dataOf(t0, fixtureSeries()) }

// dataOf is series as Data over (t0, t0+span].
func dataOf(t0 float64, series []fseries) *Data {
	d := &Data{From: t0, To: t0 + span}
	for _, s := range series {
		ser := Series{Labels: s.labels}
		for t := s.from; t <= span; t += step {
			ser.Samples = append(ser.Samples, Sample{T: t0 + t, V: s.v(t)})
		}
		switch s.labels["__name__"] {
		case contract.PodEnergy:
			d.PodEnergy = append(d.PodEnergy, ser)
		case contract.GPUAllocationInfo:
			d.Allocations = append(d.Allocations, ser)
		case contract.UnallocatedEnergy:
			d.Unallocated = append(d.Unallocated, ser)
		case contract.GPUInfo:
			if s.labels["energy_scope"] == "module" {
				d.ModuleGPUs = append(d.ModuleGPUs, ser)
			}
		case contract.PhaseStart:
			d.PhaseStarts = append(d.PhaseStarts, ser)
		case contract.PhaseEnd:
			d.PhaseEnds = append(d.PhaseEnds, ser)
		case contract.PhaseEnergy:
			d.PhaseEnergy = append(d.PhaseEnergy, ser)
		case contract.RunInfo:
			d.RunInfo = append(d.RunInfo, ser)
		default:
			d.Tokens = append(d.Tokens, ser)
		}
	}
	return d
}

func fixtureSamples(t0 float64) []remotewrite.Sample { return samplesOf(t0, fixtureSeries()) }

func samplesOf(t0 float64, series []fseries) []remotewrite.Sample {
	var out []remotewrite.Sample
	for _, s := range series {
		for t := s.from; t <= span; t += step {
			out = append(out, remotewrite.Sample{Labels: s.labels, Value: s.v(t), TimestampMs: int64(math.Round((t0 + t) * 1000))})
		}
	}
	return out
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.9g, want %.9g", what, got, want)
	}
}

func nearp(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s missing, want %.9g", what, want)
		return
	}
	near(t, what, *got, want)
}

// checkReport holds a report of the fixture to the hand-computed figures.
func checkReport(t *testing.T, r *Report, t0 float64) {
	t.Helper()
	near(t, "energy", r.EnergyJoules, 1_680_000)
	if r.Boundary != report.BoundaryModule {
		t.Errorf("boundary %q with a module-scope GPU in the range, want %q", r.Boundary, report.BoundaryModule)
	}
	near(t, "unallocated", r.UnallocatedJoules, 126_000)
	pods := map[string]PodFigures{}
	for _, p := range r.Pods {
		pods[p.Namespace+"/"+p.Pod] = p
	}
	if len(pods) != 4 {
		t.Fatalf("pods %+v", r.Pods)
	}
	a, b, m, tr := pods["serve/llama-a"], pods["serve/llama-b"], pods["serve/mistral"], pods["batch/train"]
	near(t, "llama-a energy", a.EnergyJoules, 540_000)
	near(t, "llama-a tokens", a.OutputTokens, 24_000)
	nearp(t, "llama-a J/token", a.JoulesPerToken, 22.5)
	near(t, "llama-a idle", a.IdleAllocatedJoules, 180_000)
	nearp(t, "llama-a idle share", a.IdleAllocatedRatio, 1.0/3)
	near(t, "llama-b energy", b.EnergyJoules, 240_000)
	near(t, "llama-b tokens", b.OutputTokens, 9_150)
	near(t, "llama-b idle", b.IdleAllocatedJoules, 45_000)
	near(t, "mistral energy (across the exporter restart)", m.EnergyJoules, 180_000)
	nearp(t, "mistral J/token", m.JoulesPerToken, 20)
	near(t, "train energy", tr.EnergyJoules, 720_000)
	if tr.Model != "" || tr.JoulesPerToken != nil {
		t.Errorf("train has a model or J/token: %+v", tr)
	}
	if len(r.Models) != 2 || r.Models[0].Model != "llama" || r.Models[1].Model != "mistral" {
		t.Fatalf("models %+v", r.Models)
	}
	l := r.Models[0]
	if l.Pods != 2 || l.Starts != 1 {
		t.Errorf("llama: %d pods, %d starts", l.Pods, l.Starts)
	}
	near(t, "llama energy", l.EnergyJoules, 780_000)
	near(t, "llama tokens", l.OutputTokens, 33_150)
	nearp(t, "llama J/token", l.JoulesPerToken, 780_000.0/33_150)
	near(t, "llama idle", l.IdleAllocatedJoules, 225_000)
	nearp(t, "llama idle share", l.IdleAllocatedRatio, 225_000.0/780_000)
	near(t, "llama startup", l.StartupJoules, 12_000)
	nearp(t, "mistral model J/token", r.Models[1].JoulesPerToken, 20)
	if len(r.Starts) != 1 {
		t.Fatalf("starts %+v, want llama-b's", r.Starts)
	}
	s := r.Starts[0]
	// The start ends at readiness, not at the first token.
	if s.Pod != "llama-b" || !s.Complete || s.FirstTokenAt == nil || s.ReadyAt == nil || s.EndAt == nil || s.ReadySignal != ReadyFirstScrape {
		t.Fatalf("start %+v", s)
	}
	near(t, "llama-b allocated at", s.AllocatedAt-t0, 600)
	near(t, "llama-b ready at", *s.ReadyAt-t0, 660)
	near(t, "llama-b start end", *s.EndAt-t0, 660)
	near(t, "llama-b first token at", *s.FirstTokenAt-t0, 900)
	near(t, "llama-b startup energy", s.EnergyJoules, 12_000)
	var last *Point
	for i := range r.JoulesPerTokenOverTime {
		if pts := r.JoulesPerTokenOverTime[i].Points; r.JoulesPerTokenOverTime[i].Model == "llama" && len(pts) > 0 {
			last = &pts[len(pts)-1]
		}
	}
	if last == nil {
		t.Fatal("no llama J/token over time")
	}
	near(t, "llama J/token at the end", last.T-t0, span)
	near(t, "llama J/token over the last 5 minutes", last.JoulesPerToken, 50)
}

func TestComputeFixture(t *testing.T) {
	t0 := 1_750_000_000.0
	checkReport(t, Compute(fixtureData(t0), "", ""), t0)

	board := fixtureData(t0)
	board.ModuleGPUs = nil
	if r := Compute(board, "", ""); r.Boundary != report.Boundary {
		t.Errorf("boundary %q with board-scope GPUs only, want %q", r.Boundary, report.Boundary)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, Compute(fixtureData(t0), "", "")); err != nil || !strings.Contains(md.String(), report.BoundaryModule+", integrated") {
		t.Errorf("report.md does not state the module boundary (%v):\n%s", err, md.String())
	}

	r := Compute(fixtureData(t0), "serve", "")
	if len(r.Pods) != 3 {
		t.Errorf("namespace serve: %d pods, want 3", len(r.Pods))
	}
	near(t, "namespace serve energy", r.EnergyJoules, 960_000)
	r = Compute(fixtureData(t0), "", "mistral")
	if len(r.Pods) != 1 || len(r.Models) != 1 || r.Models[0].Model != "mistral" {
		t.Errorf("model mistral: %+v", r.Pods)
	}
}

// TestCounterResetsAndEdges: the counter helper bridges resets and
// interpolates at range edges.
func TestCounterResetsAndEdges(t *testing.T) {
	c := newCounter([]Sample{{10, 100}, {20, 200}, {30, 50}, {40, 150}})
	for _, tc := range []struct{ t, want float64 }{{5, 0}, {10, 100}, {15, 150}, {30, 250}, {35, 300}, {50, 350}} {
		near(t, "counter at", c.at(tc.t), tc.want)
	}
}

// analyzeThrough analyzes the fixture at url through both read APIs
// (remote read and the query API), fails unless both give the same
// report.json, and returns the report (files in out, when set, from the
// remote-read pass).
func analyzeThrough(t *testing.T, url string, t0 float64, out string) *Report {
	t.Helper()
	var js [2][]byte
	var rep *Report
	for i, readAPI := range []string{remoteread.Remote, remoteread.Query} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		dir := out
		if i > 0 {
			dir = ""
		}
		r, err := Run(ctx, Config{PrometheusURL: url, HTTP: config.DefaultHTTPClientConfig,
			From: time.Unix(0, int64(t0*1e9)), To: time.Unix(0, int64((t0+span)*1e9)), OutDir: dir, ReadAPI: readAPI})
		cancel()
		if err != nil {
			t.Fatalf("read API %s: %v", readAPI, err)
		}
		if js[i], err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			rep = r
		}
	}
	if string(js[0]) != string(js[1]) {
		t.Errorf("remote read and the query API give different reports:\n%s\n%s", js[0], js[1])
	}
	return rep
}

// TestProductionThroughTSDB: the fixture in the embedded TSDB, read over
// the HTTP query API, gives the hand-computed figures; the three files
// are written and an earlier report is never overwritten.
func TestProductionThroughTSDB(t *testing.T) {
	s, t0 := fixtureServer(t, fixtureSamples)
	out := filepath.Join(t.TempDir(), "report")
	r := analyzeThrough(t, s.URL(), t0, out)
	checkReport(t, r, t0)
	b, err := os.ReadFile(filepath.Join(out, report.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.EnergyJoules != r.EnergyJoules {
		t.Errorf("report.json: %v, energy %v", err, back.EnergyJoules)
	}
	md, _ := os.ReadFile(filepath.Join(out, report.FileMarkdown))
	html, _ := os.ReadFile(filepath.Join(out, report.FileHTML))
	for _, want := range []string{"| llama | 2 | 780000 | 33150 | 23.53 |", "| serve | llama-b | llama |", "12000 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "<table>") {
		t.Error("report.html lacks the plot or the tables")
	}
	if err := Write(out, r); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("writing over an earlier report: %v", err)
	}
}

// TestProductionRealPrometheus: the same through Debian's Prometheus,
// fed by remote write.
func TestProductionRealPrometheus(t *testing.T) {
	srv := realprom.Start(t, "")
	t0 := float64(time.Now().Add(-40 * time.Minute).Unix())
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fixtureSamples(t0) {
		w.Append(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := w.Close(ctx)
	if err != nil || st.Lost() > 0 {
		t.Fatalf("remote write: %+v %v", st, err)
	}
	checkReport(t, analyzeThrough(t, srv.URL, t0, ""), t0)
}

// benchSeries are three bench runs' phase markers beside the fixture, as
// the exporters publish them:
//
//	bench-1  started llama-b's engine: startup T0+590..T0+700 (150 W on
//	         GPU-2: 16 500 J), warm-up T0+700..T0+890 (20 W: 3 800 J); the
//	         pod's allocation appears at T0+600, inside it: one start.
//	bench-2  outside Kubernetes (GPU-9, no pod), model mistral: startup
//	         T0+1000..T0+1100 (100 W: 10 000 J), warm-up from T0+1100,
//	         ended T0+1200 (0 J).
//	bench-0  startup before the range (T0-200): not a start of it.
func benchSeries(t0 float64) []fseries {
	exp := func(name, run, phase string, extra ...string) map[string]string {
		l := map[string]string{"__name__": name, "job": "joulemark-exporter", "instance": "n1:9402", "run_id": run, "phase": phase}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	at := func(v float64) func(float64) float64 { return func(float64) float64 { return t0 + v } }
	grow := func(w, a, b float64) func(float64) float64 {
		return func(t float64) float64 { return w * (min(t, b) - a) }
	}
	info := func(run, model string) map[string]string {
		return map[string]string{"__name__": contract.RunInfo, "job": "joulemark-bench", "run_id": run, "model": model}
	}
	return []fseries{
		{exp(contract.PhaseStart, "bench-1", "startup"), 590, at(590)},
		{exp(contract.PhaseEnd, "bench-1", "startup"), 700, at(700)},
		{exp(contract.PhaseStart, "bench-1", "warmup"), 700, at(700)},
		{exp(contract.PhaseEnd, "bench-1", "warmup"), 890, at(890)},
		{exp(contract.PhaseEnergy, "bench-1", "startup", "gpu", "2", "uuid", "GPU-2"), 590, grow(150, 590, 700)},
		{exp(contract.PhaseEnergy, "bench-1", "warmup", "gpu", "2", "uuid", "GPU-2"), 700, grow(20, 700, 890)},
		{info("bench-1", "llama"), 700, func(float64) float64 { return 1 }},
		{exp(contract.PhaseStart, "bench-2", "startup"), 1000, at(1000)},
		{exp(contract.PhaseEnd, "bench-2", "startup"), 1100, at(1100)},
		{exp(contract.PhaseStart, "bench-2", "warmup"), 1100, at(1100)},
		{exp(contract.PhaseEnd, "bench-2", "warmup"), 1200, at(1200)},
		{exp(contract.PhaseEnergy, "bench-2", "startup", "gpu", "0", "uuid", "GPU-9"), 1000, grow(100, 1000, 1100)},
		{info("bench-2", "mistral"), 1100, func(float64) float64 { return 1 }},
		{exp(contract.PhaseStart, "bench-0", "startup"), -margin, at(-200)},
		{exp(contract.PhaseEnergy, "bench-0", "startup", "gpu", "2", "uuid", "GPU-2"), -margin, grow(100, -200, -100)},
	}
}

// checkBenchStarts holds a report of the fixture with benchSeries: a
// bench-started engine counts as a start, once where the pod's allocation
// saw it too.
func checkBenchStarts(t *testing.T, r *Report, t0 float64) {
	t.Helper()
	if len(r.Starts) != 2 {
		t.Fatalf("starts %+v, want bench-1's (llama-b's start, counted once) and bench-2's", r.Starts)
	}
	b1, b2 := r.Starts[0], r.Starts[1]
	if b1.Source != StartBench || b1.RunID != "bench-1" || b1.Pod != "llama-b" || b1.Namespace != "serve" || b1.Model != "llama" || !b1.Complete || b1.EndAt == nil {
		t.Errorf("bench-1 start %+v", b1)
	} else {
		near(t, "bench-1 start", b1.AllocatedAt-t0, 590)
		near(t, "bench-1 end", *b1.EndAt-t0, 890)
	}
	near(t, "bench-1 startup energy (startup + warm-up)", b1.EnergyJoules, 20_300)
	if b2.Source != StartBench || b2.RunID != "bench-2" || b2.Pod != "" || b2.Model != "mistral" || !b2.Complete {
		t.Errorf("bench-2 start %+v", b2)
	}
	near(t, "bench-2 startup energy", b2.EnergyJoules, 10_000)
	if len(r.Models) != 2 || r.Models[0].Starts != 1 || r.Models[1].Starts != 1 {
		t.Fatalf("models %+v", r.Models)
	}
	near(t, "llama startup energy", r.Models[0].StartupJoules, 20_300)
	near(t, "mistral startup energy", r.Models[1].StartupJoules, 10_000)
}

// TestBenchStarts: a range holding a bench startup shows it, a range
// without shows none; the namespace filter keeps only the starts placed
// in a pod of it.
func TestBenchStarts(t *testing.T) {
	t0 := 1_750_000_000.0
	series := append(fixtureSeries(), benchSeries(t0)...)
	r := Compute(dataOf(t0, series), "", "")
	checkBenchStarts(t, r, t0)
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil || !strings.Contains(md.String(), "| bench run bench-1 | serve | llama-b | llama |") || strings.Contains(md.String(), "None in the range") {
		t.Errorf("report.md lacks bench-1's start (%v):\n%s", err, md.String())
	}

	if r := Compute(dataOf(t0, series), "serve", ""); len(r.Starts) != 1 || r.Starts[0].RunID != "bench-1" {
		t.Errorf("namespace serve: starts %+v, want bench-1's alone", r.Starts)
	}
	if r := Compute(dataOf(t0, series), "", "mistral"); len(r.Starts) != 1 || r.Starts[0].RunID != "bench-2" {
		t.Errorf("model mistral: starts %+v, want bench-2's alone", r.Starts)
	}

	late := dataOf(t0, series)
	late.From = t0 + 1300
	r = Compute(late, "", "")
	if len(r.Starts) != 0 || r.Models[0].Starts != 0 {
		t.Errorf("a range without a startup: starts %+v", r.Starts)
	}
	md.Reset()
	if err := WriteMarkdown(&md, r); err != nil || !strings.Contains(md.String(), "None in the range") {
		t.Errorf("report.md of a range without a startup (%v):\n%s", err, md.String())
	}
}

// TestBenchStartsThroughTSDB: the phase markers read back through both
// read APIs give the same starts.
func TestBenchStartsThroughTSDB(t *testing.T) {
	s, t0 := fixtureServer(t, func(t0 float64) []remotewrite.Sample {
		return samplesOf(t0, append(fixtureSeries(), benchSeries(t0)...))
	})
	checkBenchStarts(t, analyzeThrough(t, s.URL(), t0, ""), t0)
}

// TestBenchStartsRealPrometheus: the same through Debian's Prometheus
// (its remote read and query API), fed by remote write.
func TestBenchStartsRealPrometheus(t *testing.T) {
	srv := realprom.Start(t, "")
	t0 := float64(time.Now().Add(-40 * time.Minute).Unix())
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samplesOf(t0, append(fixtureSeries(), benchSeries(t0)...)) {
		w.Append(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := w.Close(ctx); err != nil || st.Lost() > 0 {
		t.Fatalf("remote write: %+v %v", st, err)
	}
	checkBenchStarts(t, analyzeThrough(t, srv.URL, t0, ""), t0)
}

// TestBenchStartOtherHost: bench-1's GPU reports GPU-2, the UUID of the
// GPU llama-b holds on n1, but on another host (n2, cloned VMs or
// simulated exporters): the start is not llama-b's, as a GPU is named by
// its exporter instance and UUID.
func TestBenchStartOtherHost(t *testing.T) {
	t0 := 1_750_000_000.0
	series := fixtureSeries()
	for _, s := range benchSeries(t0) {
		if s.labels["run_id"] == "bench-1" && s.labels["instance"] != "" {
			s.labels["instance"] = "n2:9402"
		}
		series = append(series, s)
	}
	r := Compute(dataOf(t0, series), "", "")
	for _, s := range r.Starts {
		if s.RunID == "bench-1" && s.Pod != "" {
			t.Errorf("bench-1 on n2 taken by pod %s/%s of n1", s.Namespace, s.Pod)
		}
	}
	if len(r.Starts) < 2 {
		t.Errorf("starts %+v, want bench-1's apart from llama-b's allocation start", r.Starts)
	}
}

// TestProductionBatches: read in batches of one pod (or instance) each, the
// fixture gives the same report as read in one batch per metric, through
// both read APIs.
func TestProductionBatches(t *testing.T) {
	s, t0 := fixtureServer(t, fixtureSamples)
	var js []string
	var counts []int
	for _, budget := range []int{1, 1 << 30} {
		for _, readAPI := range []string{remoteread.Remote, remoteread.Query} {
			reads, largest := 0, 0
			r, err := Run(context.Background(), Config{PrometheusURL: s.URL(), HTTP: config.DefaultHTTPClientConfig,
				From: time.Unix(0, int64(t0*1e9)), To: time.Unix(0, int64((t0+span)*1e9)), ReadAPI: readAPI, batchSamples: budget,
				OnRead: func(_ string, n int) { reads, largest = reads+1, max(largest, n) }})
			if err != nil {
				t.Fatalf("batches of %d samples, %s: %v", budget, readAPI, err)
			}
			b, _ := json.Marshal(r)
			js, counts = append(js, string(b)), append(counts, reads)
			t.Logf("batches of %d samples, %s: %d reads, the largest %d samples", budget, readAPI, reads, largest)
		}
	}
	// A read failing while others are in flight ends the analysis with
	// its error (the batches' goroutines return).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	_, err := Run(ctx, Config{PrometheusURL: s.URL(), HTTP: config.DefaultHTTPClientConfig,
		From: time.Unix(0, int64(t0*1e9)), To: time.Unix(0, int64((t0+span)*1e9)), ReadAPI: remoteread.Remote, batchSamples: 1,
		OnRead: func(string, int) {
			if reads++; reads == counts[0]/2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || reads >= counts[0] {
		t.Errorf("canceled after %d of %d reads: %d reads, err %v, want %v", counts[0]/2, counts[0], reads, err, context.Canceled)
	}
	checkReport(t, analyzeThrough(t, s.URL(), t0, ""), t0)
	if counts[0] <= counts[2] {
		t.Errorf("batches of one sample took %d reads, of 1G samples %d: want more", counts[0], counts[2])
	}
	for i := 1; i < len(js); i++ {
		if js[i] != js[0] {
			t.Errorf("report %d differs from the first:\n%s\n%s", i, js[0], js[i])
		}
	}
}

// TestMergeTimes: the union of sorted times, each once.
func TestMergeTimes(t *testing.T) {
	got := mergeTimes(mergeTimes(nil, []float64{1, 3, 5}), []float64{2, 3, 6})
	if want := []float64{1, 2, 3, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("mergeTimes: %v, want %v", got, want)
	}
}

// fixtureServer starts the embedded TSDB, stopped at the test's end, holding
// samples(t0) for t0 an hour ago.
func fixtureServer(t *testing.T, samples func(t0 float64) []remotewrite.Sample) (*promserver.Server, float64) {
	t.Helper()
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t0 := float64(time.Now().Add(-time.Hour).Unix())
	if err := s.AppendSamples(context.Background(), samples(t0)); err != nil {
		t.Fatal(err)
	}
	return s, t0
}
