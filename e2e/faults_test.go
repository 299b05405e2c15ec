package e2e

// The fault-injection suite: each fault is injected into real
// components on loopback (the joulemark binary as exporter on simulated
// GPUs, sim-engine, bench and runs; a real Prometheus) and asserted end to
// end. docs/e2e.md lists the faults and what each test checks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

// faultEnv is one exporter (simulated GPUs, durable storage) and, when
// asked, a Prometheus scraping it every second with the remote-write
// receiver on.
type faultEnv struct {
	bin, dir         string
	token, tokenFile string
	expAddr, expURL  string
	storage          string
	exporterArgs     []string
	exp              *process
	prom             *realprom.Server
	engAddr, engURL  string
	runsDir          string
}

func newFaultEnv(t *testing.T, withProm bool, exporterArgs ...string) *faultEnv {
	t.Helper()
	f := newFaultDirs(t)
	if withProm {
		f.prom = f.startProm(t, false)
		exporterArgs = append(exporterArgs, "--remote-write.url="+f.prom.URL+"/api/v1/write")
	}
	f.start(t, exporterArgs...)
	return f
}

// newFaultDirs is a fault env's binary, addresses, token and directories,
// nothing started yet.
func newFaultDirs(t *testing.T) *faultEnv {
	t.Helper()
	testenv.SkipIfShort(t, "the fault-injection suite starts the joulemark binary, sim-engine and Prometheus")
	f := &faultEnv{bin: joulemarkBinary(t), dir: t.TempDir()}
	f.expAddr, f.engAddr = testnet.FreeAddr(t), testnet.FreeAddr(t)
	f.expURL, f.engURL = "http://"+f.expAddr, "http://"+f.engAddr
	f.storage, f.runsDir = filepath.Join(f.dir, "exporter-data"), filepath.Join(f.dir, "runs")
	f.token = randomHex(t, 24)
	f.tokenFile = filepath.Join(f.dir, "token")
	if err := os.WriteFile(f.tokenFile, []byte(f.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// startProm starts a Prometheus scraping the exporter every second (and,
// with engine, the engine's /metrics every second too), its remote-write
// receiver on.
func (f *faultEnv) startProm(t *testing.T, engine bool) *realprom.Server {
	t.Helper()
	cfg := realprom.DefaultConfig + fmt.Sprintf(`scrape_configs:
  - job_name: joulemark-exporter
    scrape_interval: 1s
    honor_labels: true
    static_configs:
      - targets: [%q]
`, f.expAddr)
	if engine {
		cfg += fmt.Sprintf(`  - job_name: inference-engine
    scrape_interval: 1s
    static_configs:
      - targets: [%q]
`, f.engAddr)
	}
	return realprom.Start(t, cfg)
}

// start starts the exporter with the suite's flags plus exporterArgs, and
// waits until f.prom (when set) scraped it.
func (f *faultEnv) start(t *testing.T, exporterArgs ...string) {
	t.Helper()
	f.exporterArgs = append([]string{"exporter", "--gpu=sim", "--gpus=2", "--sim.engine-url=" + f.engURL,
		"--web.listen-address=" + f.expAddr, "--storage.path=" + f.storage, "--sample.interval=100ms",
		"--release.hold=1s", "--release.max-wait=20s", "--sim.ramp-seconds=0.3", "--sim.decay-seconds=0.3",
		"--sim.energy-counter"}, exporterArgs...)
	f.startExporter(t)
	if f.prom != nil {
		waitScraped(t, f.prom)
	}
}

// waitScraped waits until p scraped the exporter: Prometheus applies new
// targets after up to 5 s.
func waitScraped(t *testing.T, p *realprom.Server) {
	t.Helper()
	waitQuery(context.Background(), t, promAPI(t, p.URL), `up{job="joulemark-exporter"} == 1`, 30*time.Second,
		func(v model.Vector) bool { return len(v) == 1 })
}

// startExporter (re)starts the exporter on the same address and storage.
func (f *faultEnv) startExporter(t *testing.T) {
	t.Helper()
	f.exp = startProcess(t, "exporter", []string{"JOULEMARK_API_TOKEN=" + f.token}, f.bin, f.exporterArgs...)
	waitHTTP(context.Background(), t, f.expURL+"/-/ready", 20*time.Second)
}

// killExporter SIGKILLs the exporter: no shutdown, no final save.
func (f *faultEnv) killExporter(t *testing.T) {
	t.Helper()
	_ = f.exp.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-f.exp.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("exporter did not die on SIGKILL")
	}
}

func (f *faultEnv) client(t *testing.T) *phaseapi.Client {
	t.Helper()
	c, err := phaseapi.NewClient(f.expURL, f.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// engineCmd runs sim-engine on the env's engine address (fast: 3 ms decode
// steps, 16-token answers).
func (f *faultEnv) engineCmd(extra ...string) string {
	return strings.Join(append([]string{shQuote(f.bin), "sim-engine", "--web.listen-address=" + f.engAddr,
		"--max-num-seqs=8", "--decode-base=3ms", "--decode-per-seq=100us", "--startup-delay=500ms",
		"--shutdown-delay=100ms", "--seed=1"}, extra...), " ")
}

// benchArgs is a short lifecycle: 1 s idle, 4 warm-up requests, then the
// formal phase given by formal (e.g. --requests=200).
func (f *faultEnv) benchArgs(runID string, formal ...string) []string {
	return append([]string{"bench", "--target=" + f.engURL + "/v1", "--concurrency=4",
		"--warmup-requests=4", "--idle-duration=1s", "--workload.mean-input-tokens=30", "--set=workload.stddev_input_tokens=3",
		"--workload.mean-output-tokens=16", "--set=workload.stddev_output_tokens=2", "--extras.ignore-eos",
		"--engine.cmd=exec " + f.engineCmd(), "--set=engine.ready_timeout=30s", "--set=engine.stop_grace=5s", "--set=engine.release_wait=30s",
		"--exporter.url=" + f.expURL, "--exporter.bearer-token-file=" + f.tokenFile,
		"--runs-dir=" + f.runsDir, "--run-id=" + runID}, formal...)
}

// result is a finished joulemark command.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runJoulemark runs the binary to completion within limit; a timeout fails
// the test.
func runJoulemark(t *testing.T, limit time.Duration, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(t0)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("joulemark %s did not end within %s\nstderr:\n%s", args[0], limit, tail(r.stderr, 4000))
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// startBench starts a bench in the background (to fault it mid-run).
func startBench(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startProcess(t, "bench", nil, bin, args...)
}

// waitPhase waits until the exporter's run is in phase p.
func waitPhase(t *testing.T, c *phaseapi.Client, runID string, p contract.Phase, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.Run(ctx, runID)
		cancel()
		if err == nil && len(st.Phases) > 0 && st.Phases[len(st.Phases)-1].Phase == p {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %s not in phase %s after %s", runID, p, limit)
}

func exitStatus(p *process) int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

func waitExit(t *testing.T, p *process, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(limit):
		t.Fatalf("process did not end within %s:\n%s", limit, tail(p.out.String(), 4000))
	}
	return exitStatus(p)
}

// enginePGID is the engine's process group from the run archive dir's
// engine.pid.
func enginePGID(t *testing.T, dir string) int {
	t.Helper()
	pidb, err := os.ReadFile(filepath.Join(dir, benchjob.EnginePIDFile))
	if err != nil {
		t.Fatal(err)
	}
	var pf struct {
		PGID int `json:"pgid"`
	}
	if err := json.Unmarshal(pidb, &pf); err != nil || pf.PGID <= 1 {
		t.Fatalf("engine.pid %s: %v", pidb, err)
	}
	return pf.PGID
}

func readManifest(t *testing.T, dir string) *runarchive.Manifest {
	t.Helper()
	run, err := runarchive.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := run.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func noRunDirs(t *testing.T, runsDir string) {
	t.Helper()
	ents, _ := os.ReadDir(runsDir)
	if len(ents) != 0 {
		t.Errorf("a refused run created %d entries in the runs dir", len(ents))
	}
}

// freePortURL is a URL nothing listens on.
func freePortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// TestFaultPreflight: a wrong exporter token and a dead remote-write target
// are found before the run: one line each naming what and where, exit 1,
// no run directory, no phase posted, the refusal counted by the exporter.
func TestFaultPreflight(t *testing.T) {
	f := newFaultEnv(t, false)
	wrong := filepath.Join(f.dir, "wrong-token")
	if err := os.WriteFile(wrong, []byte("not-the-token-but-long-enough\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dead := freePortURL(t) + "/api/v1/write"
	right := f.tokenFile
	f.tokenFile = wrong
	args := append(f.benchArgs("pf-1", "--requests=10"), "--remote-write.url="+dead)
	f.tokenFile = right
	r := runJoulemark(t, 60*time.Second, f.bin, args...)
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"exporter " + f.expURL + ": token refused", "remote-write target " + dead} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	noRunDirs(t, f.runsDir)
	if _, err := f.client(t).Run(context.Background(), "pf-1"); !phaseapi.IsStatus(err, 404) {
		t.Errorf("the exporter has run pf-1 (%v): a phase was posted after a failed pre-flight", err)
	}
	if m := fetch(t, f.expURL+"/metrics"); !strings.Contains(m, "joulemark_exporter_auth_failures_total 1") {
		t.Errorf("exporter did not count the refused token:\n%s", grep(m, "auth_failures"))
	}
}

// TestFaultNeverAnsweringServer: against a server whose streams stall for
// good, --duration still ends the run: requests are canceled after
// the drain timeout (canceled_at_end), the run is unusable (exit 3), and
// the summary prints n/a where nothing was measured.
func TestFaultNeverAnsweringServer(t *testing.T) {
	f := newFaultEnv(t, false)
	startProcess(t, "sim-engine", nil, f.bin, "sim-engine", "--web.listen-address="+f.engAddr,
		"--fault.stall-rate=1", "--fault.stall-duration=1h", "--decode-base=3ms", "--startup-delay=0s")
	waitHTTP(context.Background(), t, f.engURL+"/v1/models", 20*time.Second)
	r := runJoulemark(t, 60*time.Second, f.bin, "bench", "--target="+f.engURL+"/v1", "--engine.no-lifecycle",
		"--concurrency=2", "--duration=2s", "--set=timeouts.drain=1s", "--set=timeouts.idle=0s", "--workload.mean-output-tokens=50",
		"--exporter.url="+f.expURL, "--exporter.bearer-token-file="+f.tokenFile, "--runs-dir="+f.runsDir, "--run-id=stall-1")
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (completed, unusable)\n%s\n%s", r.code, r.stdout, tail(r.stderr, 3000))
	}
	if r.took > 30*time.Second {
		t.Errorf("bench took %s with a 2 s duration and a 1 s drain", r.took)
	}
	recs := readRecords(t, filepath.Join(f.runsDir, "stall-1", runarchive.RequestsFile))
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, rec := range recs {
		if rec.ErrorClass != "canceled_at_end" {
			t.Errorf("record %+v, want class canceled_at_end", rec)
			break
		}
	}
	if !strings.Contains(r.stdout, "n/a") || strings.Contains(r.stdout, "0.0000") {
		t.Errorf("summary must print n/a for what was not measured:\n%s", r.stdout)
	}
}

// TestFaultReusedRunID: a run id is refused before anything starts once
// used: after its run was evicted from the exporter (--run.max-kept 1), after
// an exporter restart, and by Prometheus for a bench with another runs dir
// and an exporter that never saw it.
func TestFaultReusedRunID(t *testing.T) {
	f := newFaultEnv(t, true, "--run.max-kept=1")
	c := f.client(t)
	ctx := context.Background()
	for _, id := range []string{"used-1", "used-2"} {
		if _, err := c.StartPhase(ctx, id, contract.Idle); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EndRun(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Run(ctx, "used-1"); !phaseapi.IsStatus(err, 404) {
		t.Fatalf("used-1 still kept (%v): no eviction to test", err)
	}
	refused := func(id, where string, extra ...string) {
		t.Helper()
		r := runJoulemark(t, 60*time.Second, f.bin, append(f.benchArgs(id, "--requests=10"), extra...)...)
		if r.code != 1 || !strings.Contains(r.stderr, where) || !strings.Contains(r.stderr, id) {
			t.Errorf("bench --run-id %s: exit %d, want 1 with an error naming %q:\n%s", id, r.code, where, tail(r.stderr, 2000))
		}
	}
	// Prometheus holds used-2's phase markers (an ended run is not
	// restored by a restart, so wait before it).
	pa := promAPI(t, f.prom.URL)
	waitQuery(ctx, t, pa, `last_over_time(joulemark_phase_start_timestamp_seconds{run_id="used-2"}[1h])`, 20*time.Second,
		func(v model.Vector) bool { return len(v) > 0 })
	refused("used-1", "exporter "+f.expURL+": run ID used-1 was used before")

	f.killExporter(t)
	f.startExporter(t)
	refused("used-2", "exporter "+f.expURL+": run ID used-2 was used before")

	// An exporter on fresh storage never saw the id; Prometheus did.
	f.killExporter(t)
	f.storage = filepath.Join(f.dir, "fresh-storage")
	for i, a := range f.exporterArgs {
		if strings.HasPrefix(a, "--storage.path=") {
			f.exporterArgs[i] = "--storage.path=" + f.storage
		}
	}
	f.startExporter(t)
	f.runsDir = filepath.Join(f.dir, "other-runs")
	refused("used-2", "prometheus "+f.prom.URL+": run ID used-2 already has phase markers", "--prometheus.url="+f.prom.URL)
}

// TestFaultExporterRestartMidFormal: the exporter is SIGKILLed in the
// formal phase and started again on its storage: the run goes on, every
// phase is there at the end, the downtime is a gap flagged
// exporter_restarted, and the bench exits 0; analyze reports the gap
// (exporter_restarted, a warning) and excludes the run for nothing but the
// coverage the hole costs (docs/analyze.md).
func TestFaultExporterRestartMidFormal(t *testing.T) {
	f := newFaultEnv(t, true)
	b := startBench(t, f.bin, f.benchArgs("xr-1", "--duration=6s")...)
	c := f.client(t)
	waitPhase(t, c, "xr-1", contract.Formal, 60*time.Second)
	time.Sleep(time.Second)
	f.killExporter(t)
	time.Sleep(2 * time.Second)
	f.startExporter(t)
	if code := waitExit(t, b, 90*time.Second); code != 0 {
		t.Errorf("bench exit %d, want 0:\n%s", code, tail(b.out.String(), 4000))
	}
	m := readManifest(t, filepath.Join(f.runsDir, "xr-1"))
	if !slices.Contains(m.Flags, contract.FlagExporterRestarted) || slices.Contains(m.Flags, contract.FlagExporterLostPhases) || slices.Contains(m.Flags, contract.FlagExporterError) {
		t.Errorf("flags %v, want exporter_restarted and neither lost phases nor exporter errors", m.Flags)
	}
	st, err := c.Run(context.Background(), "xr-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Phases) != 5 || len(st.Gaps) != 1 || st.Gaps[0].Reason != contract.GapExporterRestarted || st.Gaps[0].End-st.Gaps[0].Start < 2 {
		t.Errorf("exporter's run after the restart: %d phases, gaps %+v; want 5 and one exporter_restarted gap of ≥ 2 s", len(st.Phases), st.Gaps)
	}
	if st.Phases[3].EnergyJoules <= 0 {
		t.Errorf("formal energy %v after the restart", st.Phases[3].EnergyJoules)
	}
	waitQuery(context.Background(), t, promAPI(t, f.prom.URL), `last_over_time(joulemark_run_release_closed{run_id="xr-1"}[1h])`, 30*time.Second,
		func(v model.Vector) bool { return len(v) > 0 })
	out := filepath.Join(f.dir, "report")
	r := runJoulemark(t, 60*time.Second, f.bin, "analyze", "--prometheus.url="+f.prom.URL, "--run-id=xr-1", "--out="+out,
		"--runs-dir="+f.runsDir, "--steady-state.window=5")
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Fatalf("analyze: exit %d, no report:\n%s", r.code, tail(r.stderr, 3000))
	}
	rep := readReport(t, filepath.Join(out, "report.json"))
	if !slices.Contains(flagCodes(rep), "exporter_restarted") {
		t.Errorf("report flags %v, want exporter_restarted", flagCodes(rep))
	}
	for _, c := range excludingCodes(rep) {
		if c != "coverage_low" && c != "steady_state_not_reached" && c != "too_few_requests" {
			t.Errorf("the restart excluded the run for %s: want at most coverage_low (flags %v)", c, flagCodes(rep))
		}
	}
	if (r.code == 3) == rep.Valid {
		t.Errorf("analyze exit %d with valid %v: want 3 exactly when invalid", r.code, rep.Valid)
	}
}

// TestFaultBenchKilledThenFinalize: SIGKILL of the bench mid-formal takes
// its engine's process group with it; runs list shows the run running;
// runs finalize makes the archive final (killed) and ends the exporter's
// run.
func TestFaultBenchKilledThenFinalize(t *testing.T) {
	f := newFaultEnv(t, false)
	b := startBench(t, f.bin, f.benchArgs("bk-1", "--duration=60s")...)
	waitPhase(t, f.client(t), "bk-1", contract.Formal, 60*time.Second)
	time.Sleep(1500 * time.Millisecond) // records reach the disk every second
	pgid := enginePGID(t, filepath.Join(f.runsDir, "bk-1"))
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	waitExit(t, b, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(-pgid, 0) == nil {
		t.Errorf("the engine's process group %d outlived the killed bench", pgid)
	}
	r := runJoulemark(t, 30*time.Second, f.bin, "runs", "list", "--runs-dir="+f.runsDir)
	if r.code != 0 || !strings.Contains(r.stdout, "bk-1") || !strings.Contains(r.stdout, "running") {
		t.Errorf("runs list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runJoulemark(t, 60*time.Second, f.bin, "runs", "finalize", "bk-1", "--runs-dir="+f.runsDir, "--exporter.bearer-token-file="+f.tokenFile)
	if r.code != 0 {
		t.Fatalf("runs finalize: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := readManifest(t, filepath.Join(f.runsDir, "bk-1"))
	if m.Status != runarchive.StatusKilled {
		t.Errorf("status %s after finalize, want killed", m.Status)
	}
	if recs := readRecords(t, filepath.Join(f.runsDir, "bk-1", runarchive.RequestsFile)); len(recs) == 0 {
		t.Error("the finalized archive has no records")
	}
	st, err := f.client(t).Run(context.Background(), "bk-1")
	if err != nil || st.State != phaseapi.RunEnded || st.EndReason != contract.EndReasonAPI {
		t.Errorf("exporter run after finalize: %+v, %v; want ended through the API", st, err)
	}
}

// TestFaultEngineKilled: the engine dies in the formal phase: the bench
// ends at once, status failed with engine_exited, the records kept, the
// exporter's run ended.
func TestFaultEngineKilled(t *testing.T) {
	f := newFaultEnv(t, false)
	b := startBench(t, f.bin, f.benchArgs("ek-1", "--duration=60s")...)
	waitPhase(t, f.client(t), "ek-1", contract.Formal, 60*time.Second)
	time.Sleep(500 * time.Millisecond)
	pgid := enginePGID(t, filepath.Join(f.runsDir, "ek-1"))
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // the engine (and its shell) killed, as by the OOM killer
	if code := waitExit(t, b, 60*time.Second); code != 1 {
		t.Errorf("bench exit %d, want 1:\n%s", code, tail(b.out.String(), 3000))
	}
	m := readManifest(t, filepath.Join(f.runsDir, "ek-1"))
	if m.Status != runarchive.StatusFailed || !slices.Contains(m.Flags, contract.FlagEngineExited) {
		t.Errorf("status %s flags %v, want failed with engine_exited", m.Status, m.Flags)
	}
	st, err := f.client(t).Run(context.Background(), "ek-1")
	if err != nil || st.State != phaseapi.RunEnded {
		t.Errorf("exporter run: %+v, %v; want ended", st, err)
	}
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
