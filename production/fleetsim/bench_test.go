package fleetsim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/production"
)

// The fleet of BenchmarkFleet (docs/deploy.md, Sizing):
//
//	go test -run '^$' -bench Fleet -benchtime 1x ./production/fleetsim -fleet.nodes 16 -fleet.hours 24
var (
	flagNodes       = flag.Int("fleet.nodes", 16, "BenchmarkFleet: nodes of 8 GPUs")
	flagHours       = flag.Int("fleet.hours", 24, "BenchmarkFleet: hours of data")
	flagDir         = flag.String("fleet.dir", "", "BenchmarkFleet: TSDB directory to write (kept; reused when it holds blocks); default a temporary one")
	flagAnalyzeOnly = flag.Bool("fleet.analyze-only", false, "BenchmarkFleet: measure analyze production alone (not the dashboard queries and rule groups)")
)

// childEnv names the measurement a child process runs (TestFleetChild).
const childEnv = "JOULEMARK_FLEETSIM_CHILD"

// Profiles of the analysis, when set: cpuProfileEnv names the file the
// analyze child writes its CPU profile to, serverProfileEnv the file the
// benchmark's process (the embedded Prometheus serving it) writes its own
// to over the same time.
const (
	cpuProfileEnv    = "JOULEMARK_FLEETSIM_CPUPROFILE"
	serverProfileEnv = "JOULEMARK_FLEETSIM_SERVER_CPUPROFILE"
)

// job is what a child process is given and returns (as JSON files).
type job struct {
	Mode       string // generate, analyze, queries, rules
	Dir, URL   string
	Nodes      int
	From, To   time.Time // the fleet's range
	AFrom, ATo time.Time // the analyzed range
}

// result is a child's measurements.
type result struct {
	WallSeconds float64
	Stats       Stats
	Models      []production.ModelFigures
	Queries     []queryCost
	// Reads, Samples and Largest: analyze production's reads, their
	// samples in all, and the largest (LargestRead its selector).
	Reads, Samples, Largest int
	LargestRead             string
	PeakRSS                 int64   // bytes, from the child's rusage
	CPUSeconds              float64 // user and system, the child's whole life
}

// queryCost is one query's cost.
type queryCost struct {
	Name         string
	WallSeconds  float64
	TotalSamples int64
	PeakSamples  int
	ResultSeries int
	Error        string `json:",omitempty"`
}

// BenchmarkFleet writes a fleet of -fleet.nodes × 8 GPUs over
// -fleet.hours, then measures, each in its own process for its peak RSS:
// the generation, analyze production over the range (against the embedded
// Prometheus), the samples each of its reads and each fleet dashboard
// query touches, and one evaluation of each recording-rule group. It
// checks the analysis' energy and tokens per model against the fleet's.
func BenchmarkFleet(b *testing.B) {
	end := time.Now().Add(-time.Hour).Truncate(time.Hour)
	j := job{Nodes: *flagNodes, From: end.Add(-time.Duration(*flagHours)*time.Hour - 10*time.Minute), To: end,
		AFrom: end.Add(-time.Duration(*flagHours) * time.Hour), ATo: end.Add(-time.Minute)}
	j.Dir = *flagDir
	if j.Dir == "" {
		j.Dir = filepath.Join(b.TempDir(), "tsdb")
	}
	if blocks, _ := filepath.Glob(filepath.Join(j.Dir, "01*")); len(blocks) > 0 {
		meta := readJob(b, filepath.Join(j.Dir, "fleet.json"))
		if meta.Nodes != j.Nodes {
			b.Fatalf("%s holds a fleet of %d nodes, not %d", j.Dir, meta.Nodes, j.Nodes)
		}
		j.From, j.To, j.AFrom, j.ATo = meta.From, meta.To, meta.AFrom, meta.ATo
	} else {
		g := runChild(b, j, "generate")
		writeJob(b, filepath.Join(j.Dir, "fleet.json"), j)
		logf("generate: %d nodes × 8 GPUs, %s: %d series, %d samples, %d blocks in %.1f s (CPU %.1f s), peak RSS %d MB",
			j.Nodes, j.To.Sub(j.From), g.Stats.Series, g.Stats.Samples, g.Stats.Blocks, g.WallSeconds, g.CPUSeconds, g.PeakRSS>>20)
		b.ReportMetric(float64(g.Stats.Samples), "samples")
		b.ReportMetric(float64(g.Stats.Series), "series")
		b.ReportMetric(float64(g.Stats.HeadHeapBytes)/float64(j.Nodes*8)*1000/(1<<20), "head-MB/1000GPU")
		logf("TSDB head (one %s block of the fleet) Go heap after GC: %d MB, %.0f MB per 1,000 GPUs",
			Window, g.Stats.HeadHeapBytes>>20, float64(g.Stats.HeadHeapBytes)/float64(j.Nodes*8)*1000/(1<<20))
	}
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: j.Dir, ReadOnly: true, DisableRemoteWrite: true})
	if err != nil {
		b.Fatal(err)
	}
	j.URL = s.URL()
	stop := startProfile(b, os.Getenv(serverProfileEnv))
	a := runChild(b, j, "analyze")
	stop()
	b.ReportMetric(a.WallSeconds, "analyze-s")
	b.ReportMetric(float64(a.PeakRSS>>20), "analyze-RSS-MB")
	b.ReportMetric(a.CPUSeconds, "analyze-CPU-s")
	b.ReportMetric(float64(a.Largest), "analyze-largest-read")
	logf("analyze production: %.2f s (process CPU %.2f s), peak RSS %d MB; %d reads, %d samples, the largest %d samples (%s)",
		a.WallSeconds, a.CPUSeconds, a.PeakRSS>>20, a.Reads, a.Samples, a.Largest, a.LargestRead[:min(len(a.LargestRead), 100)])
	f, _ := New(Config{Nodes: j.Nodes, From: j.From, To: j.To})
	checkTotals(b, f.Totals(j.AFrom, j.ATo), a.Models)
	serverRSS := peakRSSSelf(b)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	logf("embedded Prometheus serving the analysis (this process): peak RSS %d MB", serverRSS>>20)
	if *flagAnalyzeOnly {
		return
	}
	for _, mode := range []string{"queries", "rules"} {
		r := runChild(b, j, mode)
		logf("%s: %.2f s in all (process CPU %.2f s), peak RSS %d MB (the TSDB opened read-only in the process)", mode, r.WallSeconds, r.CPUSeconds, r.PeakRSS>>20)
		logf("| %s | wall s | samples touched | peak samples | series |", mode)
		for _, q := range r.Queries {
			logf("| %s | %.3f | %d | %d | %d |%s", q.Name, q.WallSeconds, q.TotalSamples, q.PeakSamples, q.ResultSeries, q.Error)
		}
	}
}

// logf prints one line of BenchmarkFleet's figures (b.Logf truncates a
// benchmark's log).
func logf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// checkTotals fails unless the analysis' figures are the fleet's.
func checkTotals(b *testing.B, want map[string]ModelTotal, got []production.ModelFigures) {
	if len(got) != len(want) {
		b.Errorf("analyze production reports %d models, the fleet has %d", len(got), len(want))
	}
	for _, m := range got {
		w := want[m.Model]
		if !near(m.EnergyJoules, w.EnergyJoules) || !near(m.OutputTokens, w.OutputTokens) {
			b.Errorf("%s: %v J, %v tokens; the fleet's %v J, %v tokens", m.Model, m.EnergyJoules, m.OutputTokens, w.EnergyJoules, w.OutputTokens)
		}
	}
}

// runChild runs one measurement in a child process and returns its result,
// its peak RSS from the kernel.
func runChild(b *testing.B, j job, mode string) result {
	b.Helper()
	j.Mode = mode
	tmp := b.TempDir()
	in, out := filepath.Join(tmp, "job.json"), filepath.Join(tmp, "result.json")
	writeJob(b, in, j)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+in+","+out)
	cmd.Stderr, cmd.Stdout = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("child %s: %v", mode, err)
	}
	var r result
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		b.Fatalf("child %s: result: %v", mode, err)
	}
	r.PeakRSS = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	r.CPUSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return r
}

// TestFleetChild is BenchmarkFleet's child process; it runs nothing
// otherwise.
func TestFleetChild(t *testing.T) {
	files := os.Getenv(childEnv)
	if files == "" {
		t.Skip("the child process of BenchmarkFleet")
	}
	in, out, _ := strings.Cut(files, ",")
	j := readJob(t, in)
	ctx := context.Background()
	var (
		r   result
		err error
	)
	start := time.Now()
	switch j.Mode {
	case "generate":
		var f *Fleet
		if f, err = New(Config{Nodes: j.Nodes, From: j.From, To: j.To}); err == nil {
			r.Stats, err = f.Write(ctx, j.Dir, nil)
		}
	case "analyze":
		stop := startProfile(t, os.Getenv(cpuProfileEnv))
		defer stop()
		var rep *production.Report
		rep, err = production.Run(ctx, production.Config{PrometheusURL: j.URL, HTTP: config.DefaultHTTPClientConfig, From: j.AFrom, To: j.ATo,
			OnRead: func(sel string, n int) {
				r.Reads, r.Samples = r.Reads+1, r.Samples+n
				if n > r.Largest {
					r.Largest, r.LargestRead = n, sel
				}
			}})
		if rep != nil {
			r.Models = rep.Models
		}
	case "queries":
		r.Queries, err = queryCosts(ctx, j)
	case "rules":
		r.Queries, err = ruleCosts(ctx, j, "../../rules/recording.yml")
	default:
		err = fmt.Errorf("mode %q", j.Mode)
	}
	r.WallSeconds = time.Since(start).Seconds()
	if err != nil {
		t.Fatalf("%s: %v", j.Mode, err)
	}
	writeJob(t, out, r)
}

// startProfile starts a CPU profile into path (none when empty) and
// returns what stops it.
func startProfile(t testing.TB, path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

func writeJob(t testing.TB, path string, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func readJob(t testing.TB, path string) job {
	var j job
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// peakRSSSelf is this process' peak RSS (VmHWM).
func peakRSSSelf(t testing.TB) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
