package analyze

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/joulemark/joulemark/internal/hugeheap"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/report"
)

// BenchmarkCompute1M is the scale target: 1M requests and 3 hours of 8 GPUs
// sampled at 10 Hz (target < 10 s, < 2 GB). Run it alone:
//
//	go test ./analyze -run '^$' -bench Compute1M -benchtime 1x -benchmem
//
// It reports the heap in use after Compute as heap-MB (the input data
// included).
func BenchmarkCompute1M(b *testing.B) {
	d := synthRun(1_000_000, 8, 3*3600, 10)
	p := DefaultParams()
	b.ResetTimer()
	var r *report.Report
	for b.Loop() {
		var err error
		r, _, err = computeSeries(d, p)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	if r.Requests.Started != 1_000_000 || !r.SteadyState.Reached {
		b.Fatalf("unexpected result: %d requests, steady state %v (%s)", r.Requests.Started, r.SteadyState.Reached, r.SteadyState.Reason)
	}
}

// BenchmarkHTML1M renders report.html for the same run (plots reduce every
// series to at most a few thousand points).
func BenchmarkHTML1M(b *testing.B) {
	d := synthRun(1_000_000, 8, 3*3600, 10)
	r, pd, err := computeSeries(d, DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := WriteHTML(io.Discard, r, pd); err != nil {
			b.Fatal(err)
		}
	}
}

var benchRequests = flag.Int("bench-requests", 100_000, "requests of BenchmarkAnalyzeTSDB's run (formal lasts requests/100 s)")

// BenchmarkAnalyzeTSDB is the whole path for a run of n requests and 8 GPUs
// at 10 Hz held in the in-process TSDB (client and server in this process):
//
//	go test -c -o /tmp/analyze.test ./analyze
//	/usr/bin/time -v /tmp/analyze.test -test.run '^$' -test.bench 'AnalyzeTSDB/.*/remote-read' -test.benchtime 1x -test.benchmem -bench-requests 1000000
//
// N/remote-read is Analyze reading the raw series through remote read,
// N/query through the query API: the reads over HTTP, decoding, joining
// the per-request samples, and Compute. N/server replays the query-API
// requests Analyze made and discards the responses: the in-process
// server's share of N/query. Each reports cpu-s (user+system CPU of the
// process per op), peak-heap-MB (the process' heap objects, sampled every
// 5 ms, TSDB included), base-heap-MB (live heap objects before the op: the
// TSDB) and maxrss-MB (the process' max RSS so far: run one sub-benchmark
// per process to read it). The fixture is appended in 10-minute slices so
// that its generation does not set the process' max RSS.
func BenchmarkAnalyzeTSDB(b *testing.B) {
	for _, n := range []int{*benchRequests} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d := synthRun(n, 8, float64(n)/100, 10)
			s, err := promserver.Start(context.Background(), promserver.Options{Dir: b.TempDir(), MaxSamples: 200_000_000})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := appendInSlices(s, d, 600); err != nil {
				b.Fatal(err)
			}
			runID := d.RunID
			d = nil
			cfg := Config{PrometheusURL: s.URL(), RunID: runID, Params: DefaultParams(), Now: fixtureNow().Add(time.Duration(n/100) * time.Second)}
			for _, readAPI := range []string{remoteread.Remote, remoteread.Query} {
				b.Run(readAPI, func(b *testing.B) {
					cfg := cfg
					cfg.ReadAPI = readAPI
					base := settle()
					peak := watchHeap()
					cpu0 := cpuTime()
					b.ResetTimer()
					for b.Loop() {
						r, _, err := Analyze(context.Background(), cfg)
						if err != nil {
							b.Fatal(err)
						}
						if r.Requests.Started != n {
							b.Fatalf("%d requests read back, want %d", r.Requests.Started, n)
						}
					}
					b.StopTimer()
					b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s")
					b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
					b.ReportMetric(float64(base)/(1<<20), "base-heap-MB")
					b.ReportMetric(float64(maxRSS())/(1<<20), "maxrss-MB")
				})
				b.Run(readAPI+"-process", func(b *testing.B) {
					benchAnalyzeProcess(b, s.URL(), runID, cfg.Now, readAPI, n)
				})
			}
			b.Run("server", func(b *testing.B) {
				var rec recorder
				// The requests Analyze makes, recorded by a load through a
				// recording transport.
				client, err := api.NewClient(api.Config{Address: s.URL(), RoundTripper: &rec})
				if err != nil {
					b.Fatal(err)
				}
				l := &loader{api: v1.NewAPI(client), runID: runID, lookback: DefaultLookback, now: cfg.Now}
				if _, err := l.load(context.Background()); err != nil {
					b.Fatal(err)
				}
				base := settle()
				peak := watchHeap()
				cpu0 := cpuTime()
				b.ResetTimer()
				for b.Loop() {
					if err := rec.replay(context.Background(), defaultParallelism); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s")
				b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(base)/(1<<20), "base-heap-MB")
				b.ReportMetric(float64(rec.bytes.Load())/float64(b.N)/(1<<20), "resp-MB")
			})
		})
	}
}

// BenchmarkAnalyzeRealPrometheus is BenchmarkAnalyzeTSDB's run pushed by
// remote write into Debian's Prometheus 2.42 (a process of its own), then
// analyzed by an analyze process through each read API:
//
//	/tmp/analyze.test -test.run '^$' -test.bench AnalyzeRealPrometheus -test.benchtime 1x -bench-requests 1000000
//
// wall-s, client-cpu-s and client-maxrss-MB are the analyze process'.
func BenchmarkAnalyzeRealPrometheus(b *testing.B) {
	n := *benchRequests
	srv := realprom.Start(b, "")
	d := synthRun(n, 8, float64(n)/100, 10)
	push := func(samples []remotewrite.Sample) error {
		w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write", BatchSize: 10000, BufferSize: len(samples) + 1, MaxElapsed: time.Minute}, nil)
		if err != nil {
			return err
		}
		for _, s := range samples {
			if !w.Append(s) {
				return errors.New("remote-write buffer full")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		st, err := w.Close(ctx)
		if err == nil && st.Lost() > 0 {
			err = fmt.Errorf("%d samples lost", st.Lost())
		}
		return err
	}
	if err := sendInSlices(push, d, 600); err != nil {
		b.Fatal(err)
	}
	runID := d.RunID
	d = nil
	settle()
	now := fixtureNow().Add(time.Duration(n/100) * time.Second)
	for _, readAPI := range []string{remoteread.Remote, remoteread.Query} {
		b.Run(readAPI+"-process", func(b *testing.B) {
			benchAnalyzeProcess(b, srv.URL, runID, now, readAPI, n)
		})
	}
}

// appendInSlices appends d's samples to the server a slice of sliceSec
// seconds at a time, in time order.
func appendInSlices(s *promserver.Server, d *RunData, sliceSec float64) error {
	return sendInSlices(func(samples []remotewrite.Sample) error { return s.AppendSamples(context.Background(), samples) }, d, sliceSec)
}

// sendInSlices hands d's samples to send a slice of sliceSec seconds at a
// time, in time order.
func sendInSlices(send func([]remotewrite.Sample) error, d *RunData, sliceSec float64) error {
	ms := func(t float64) int64 { return int64(math.Round(t * 1000)) }
	// Phase gauges, phase energies and release: fixtureSamples with GPUs
	// that have no samples (phase energies are per GPU).
	meta := &RunData{RunID: d.RunID, Phases: d.Phases, PhaseEnergy: d.PhaseEnergy, ReleaseClosed: d.ReleaseClosed}
	for _, g := range d.GPUs {
		g.Energy, g.Power = nil, nil
		meta.GPUs = append(meta.GPUs, g)
	}
	rest := fixtureSamples(meta)
	slices.SortFunc(rest, func(a, b remotewrite.Sample) int { return cmp.Compare(a.TimestampMs, b.TimestampMs) })
	reqs := slices.Clone(d.Requests)
	slices.SortFunc(reqs, func(a, b Request) int { return cmp.Compare(ms(a.End), ms(b.End)) })
	from, to := math.Inf(1), math.Inf(-1)
	for _, g := range d.GPUs {
		from, to = min(from, g.Energy[0].T, g.Power[0].T), max(to, g.Energy[len(g.Energy)-1].T, g.Power[len(g.Power)-1].T)
	}
	if len(reqs) > 0 {
		from, to = min(from, reqs[0].End), max(to, reqs[len(reqs)-1].End)
	}
	if len(rest) > 0 {
		from, to = min(from, float64(rest[0].TimestampMs)/1000), max(to, float64(rest[len(rest)-1].TimestampMs)/1000)
	}
	// in returns the part of s (sorted by at) with at in [lo, hi) ms.
	in := func(n int, at func(int) int64, lo, hi int64) (int, int) {
		a := sort.Search(n, func(k int) bool { return at(k) >= lo })
		z := sort.Search(n, func(k int) bool { return at(k) >= hi })
		return a, z
	}
	want := len(rest)
	for _, r := range d.Requests {
		want += 4
		if r.HasTTFT {
			want++
		}
	}
	for _, g := range d.GPUs {
		want += 2*len(g.Energy) + len(g.Power) // counter and info, power
	}
	appended := 0
	for t := math.Floor(from); t <= to; t += sliceSec {
		lo, hi := ms(t), ms(t+sliceSec)
		part := &RunData{RunID: d.RunID, Phases: map[string]PhaseBounds{}}
		a, z := in(len(reqs), func(k int) int64 { return ms(reqs[k].End) }, lo, hi)
		part.Requests = reqs[a:z]
		for _, g := range d.GPUs {
			ea, ez := in(len(g.Energy), func(k int) int64 { return ms(g.Energy[k].T) }, lo, hi)
			pa, pz := in(len(g.Power), func(k int) int64 { return ms(g.Power[k].T) }, lo, hi)
			g.Energy, g.Power = g.Energy[ea:ez], g.Power[pa:pz]
			part.GPUs = append(part.GPUs, g)
		}
		samples := fixtureSamples(part)
		ra, rz := in(len(rest), func(k int) int64 { return rest[k].TimestampMs }, lo, hi)
		samples = append(samples, rest[ra:rz]...)
		if err := send(samples); err != nil {
			return err
		}
		appended += len(samples)
	}
	if appended != want {
		return fmt.Errorf("appended %d samples, the run has %d", appended, want)
	}
	return nil
}

// settle collects garbage and returns freed memory to the OS, so the
// fixture's generation does not weigh on what is measured next. It returns
// the bytes of live heap objects left (the TSDB's, mostly).
func settle() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapObjects is the runtime metric watchHeap samples.
const heapObjects = "/memory/classes/heap/objects:bytes"

var benchChildEnv = flag.String("bench-child-env", "", "NAME=VALUE pairs (space-separated) added to the environment of the benchmarks' analyze processes, e.g. GOMEMLIMIT=400MiB")

// Environment of the analyze helper process (analyzeChild, run by TestMain).
const (
	envChildURL   = "JOULEMARK_ANALYZE_CHILD_URL"
	envChildRun   = "JOULEMARK_ANALYZE_CHILD_RUN"
	envChildNow   = "JOULEMARK_ANALYZE_CHILD_NOW"
	envChildAPI   = "JOULEMARK_ANALYZE_CHILD_READ_API"
	envChildCount = "JOULEMARK_ANALYZE_CHILD_REQUESTS"
	// envChildProfile, set through -bench-child-env, names the file the
	// analyze process writes its CPU profile to.
	envChildProfile = "JOULEMARK_ANALYZE_CHILD_CPUPROFILE"
	// envChildMemProfile, set the same way, names the file the analyze
	// process writes its allocation profile to.
	envChildMemProfile = "JOULEMARK_ANALYZE_CHILD_MEMPROFILE"
	// envChildHeapProfile, set the same way, names the file the analyze
	// process writes its in-use heap profile to, taken after the
	// collection that found the most live heap.
	envChildHeapProfile = "JOULEMARK_ANALYZE_CHILD_HEAPPROFILE"
	// envChildHugePages, set the same way, is the process' --huge-pages
	// (HugePageHeap unless set; 0: none).
	envChildHugePages = "JOULEMARK_ANALYZE_CHILD_HUGE_PAGES"
)

// benchAnalyzeProcess runs Analyze in a process of its own (this test
// binary, its TestMain running analyzeChild) against the server at url, once per op, and
// reports that process' wall time, user+system CPU and max RSS: the client
// alone, as `joulemark analyze` would run it.
func benchAnalyzeProcess(b *testing.B, url, runID string, now time.Time, readAPI string, n int) {
	var wall, cpu time.Duration
	var rss int64
	for b.Loop() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envChildURL+"="+url, envChildRun+"="+runID,
			envChildNow+"="+strconv.FormatInt(now.Unix(), 10), envChildAPI+"="+readAPI, envChildCount+"="+strconv.Itoa(n))
		cmd.Env = append(cmd.Env, strings.Fields(*benchChildEnv)...)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		wall += time.Since(t0)
		if err != nil {
			b.Fatalf("analyze process: %v\n%s", err, out)
		}
		if testing.Verbose() {
			b.Logf("analyze process:\n%s", out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		// Not ru.Maxrss: across exec Linux keeps the parent's high-water
		// mark there (the child starts as a clone of this process).
		_, after, ok := strings.Cut(string(out), hwmPrefix)
		kb, err := strconv.ParseInt(strings.Fields(after + " x")[0], 10, 64)
		if !ok || err != nil {
			b.Fatalf("analyze process printed no %s:\n%s", hwmPrefix, out)
		}
		rss = max(rss, kb*1024)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "client-cpu-s")
	b.ReportMetric(float64(rss)/(1<<20), "client-maxrss-MB")
}

// TestMain runs the analyze helper process instead of the tests when the
// process is benchAnalyzeProcess' child.
func TestMain(m *testing.M) {
	if os.Getenv(envChildURL) != "" {
		if err := analyzeChild(); err != nil {
			fmt.Fprintln(os.Stderr, "analyze process:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// analyzeChild is the analyze helper process of benchAnalyzeProcess: it
// analyzes the run its environment names, checks the request count and
// prints its peak RSS.
func analyzeChild() (err error) {
	sec, err := strconv.ParseInt(os.Getenv(envChildNow), 10, 64)
	if err != nil {
		return err
	}
	want, err := strconv.Atoi(os.Getenv(envChildCount))
	if err != nil {
		return err
	}
	cfg := Config{PrometheusURL: os.Getenv(envChildURL), RunID: os.Getenv(envChildRun), Params: DefaultParams(), Now: time.Unix(sec, 0), ReadAPI: os.Getenv(envChildAPI)}
	if os.Getenv("GOGC") == "" { // as joulemark analyze runs (--gc-percent)
		debug.SetGCPercent(GCPercent)
	}
	if err := adviseHugePages(os.Getenv(envChildHugePages)); err != nil {
		return err
	}
	if path := os.Getenv(envChildProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if path := os.Getenv(envChildHeapProfile); path != "" {
		stop := heapAtPeak(path)
		defer func() {
			if perr := stop(); err == nil {
				err = perr
			}
		}()
	}
	r, _, err := Analyze(context.Background(), cfg)
	if err != nil {
		return err
	}
	if r.Requests.Started != want {
		return fmt.Errorf("%d requests read back, want %d", r.Requests.Started, want)
	}
	if path := os.Getenv(envChildMemProfile); path != "" {
		if err := writeAllocs(path); err != nil {
			return err
		}
	}
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Println(hwmPrefix + strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return nil
}

// adviseHugePages asks for huge pages as joulemark analyze run does
// (--huge-pages): HugePageHeap, or the size given.
func adviseHugePages(size string) error {
	b := units.Base2Bytes(HugePageHeap)
	if size != "" {
		var err error
		if b, err = units.ParseBase2Bytes(size); err != nil {
			return fmt.Errorf("%s=%q: %w", envChildHugePages, size, err)
		}
	}
	if err := hugeheap.Advise(int64(b)); err != nil && !errors.Is(err, hugeheap.ErrUnsupported) {
		return err
	}
	return nil
}

// writeAllocs writes the process' allocation profile to path (after a
// collection, so that it holds every allocation so far).
func writeAllocs(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("allocation profile: %w", err)
	}
	return f.Close()
}

// heapAtPeak watches the live heap after each collection and, while the
// last collection found the most live heap so far, rewrites the in-use
// heap profile to path every 20 ms: the profile is published once the
// collection's sweep is done, so the last one written in that cycle holds
// it. The returned function stops it and returns its first error.
func heapAtPeak(path string) func() error {
	runtime.MemProfileRate = 64 << 10
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		var peak, peakCycle uint64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-t.C:
			}
			metrics.Read(s)
			if live, c := s[0].Value.Uint64(), s[1].Value.Uint64(); live > peak {
				peak, peakCycle = live, c
			} else if c != peakCycle {
				continue
			}
			if err := writeProfile(path, "heap"); err != nil {
				<-stop
				done <- err
				return
			}
		}
	}()
	return func() error {
		close(stop)
		return <-done
	}
}

// writeProfile writes the named pprof profile to path.
func writeProfile(path, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("%s profile: %w", name, err)
	}
	return f.Close()
}

// hwmPrefix starts the helper process' line with its peak RSS in kB
// (VmHWM: this process image's own high-water mark).
const hwmPrefix = "analyze-vmhwm-kb="

// maxRSS is the process' largest resident set so far, in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// cpuTime is the process' user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// watchHeap samples the bytes of live and not yet swept heap objects every
// 5 ms until the returned function is called, which returns the largest.
func watchHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// recorder is an http.RoundTripper that records the query requests it
// passes on, to replay them without a client decoding the responses.
type recorder struct {
	mu    sync.Mutex
	reqs  []recorded
	bytes atomic.Int64 // response bytes read by replay
}

type recorded struct {
	method, url string
	header      http.Header
	body        []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.String(), req.Header.Clone(), body})
	r.mu.Unlock()
	return replayTransport.RoundTrip(req)
}

// replayTransport asks for uncompressed responses, as the analyze client
// (prometheus/common/config) does.
var replayTransport = &http.Transport{DisableCompression: true}

// replay sends the recorded requests, par at a time, and reads each
// response to the end without decoding it.
func (r *recorder) replay(ctx context.Context, par int) error {
	return inOrder(ctx, len(r.reqs), par, func(ctx context.Context, i int) (struct{}, error) {
		q := r.reqs[i]
		req, err := http.NewRequestWithContext(ctx, q.method, q.url, bytes.NewReader(q.body))
		if err != nil {
			return struct{}{}, err
		}
		req.Header = q.header.Clone()
		resp, err := replayTransport.RoundTrip(req)
		if err != nil {
			return struct{}{}, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		r.bytes.Add(n)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("replaying %s: status %s", q.url, resp.Status)
		}
		return struct{}{}, err
	}, func(int, struct{}) error { return nil })
}
