package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// Report is node-check.json.
type Report struct {
	Facts     *Facts              `json:"facts"`
	Poll      []Poll              `json:"poll"`
	ProcsHost *ProcView           `json:"procs_host_namespace"`
	ProcsOwn  *ProcView           `json:"procs_own_namespace"`
	ProcsNote string              `json:"procs_own_namespace_note,omitempty"`
	Load      *Load               `json:"load"`
	Run       *phaseapi.RunStatus `json:"run"`
	Counter   []CounterCompare    `json:"phase_energy_vs_counter"`
	Checks    []Check             `json:"checks"`
	Elapsed   float64             `json:"elapsed_seconds"`
}

// CounterCompare is GPU 0's phase energy by the exporter and by the raw
// counter. The script reads the counter right before (counter.<phase>.pre)
// and right after (counter.<phase>) each phase post; when both reads
// bracket the exporter's boundary the counter is interpolated linearly to
// it (Bracketed), so both figures cover the same boundaries. Otherwise
// only the read after the post counts, and the difference includes the
// StartLag and EndLag seconds (the read's own NVML init) at the power of
// those instants.
type CounterCompare struct {
	Phase     string  `json:"phase"`
	Exporter  float64 `json:"exporter_joules"`
	Counter   float64 `json:"counter_joules"`
	DiffRatio float64 `json:"difference_ratio"`
	StartLag  float64 `json:"counter_start_lag_seconds"`
	EndLag    float64 `json:"counter_end_lag_seconds"`
	Bracketed bool    `json:"counter_bracketed"`
}

// Check is one pass/fail line.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Info string `json:"detail"`
}

func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func report(dir, out string) error {
	if dir == "" || out == "" {
		return fmt.Errorf("report needs --dir and --out")
	}
	r := Report{Facts: &Facts{}, ProcsHost: &ProcView{}, ProcsOwn: &ProcView{}, Load: &Load{}, Run: &phaseapi.RunStatus{}}
	var missing []string
	for name, v := range map[string]any{"facts.json": r.Facts, "poll.json": &r.Poll, "procs-host.json": r.ProcsHost,
		"load.json": r.Load, "run.json": r.Run} {
		if err := readJSON(dir, name, v); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", name, err))
		}
	}
	// unshare needs CAP_SYS_ADMIN: without it the view is missing, said in the note
	if err := readJSON(dir, "procs-unshare.json", r.ProcsOwn); err != nil {
		r.ProcsNote = fmt.Sprintf("no view from a new PID namespace (%v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "procs-unshare.err")); err == nil && len(b) > 0 {
		r.ProcsNote = strings.TrimSpace(r.ProcsNote + " " + string(b))
	}
	_ = readJSON(dir, "elapsed.json", &r.Elapsed)
	r.Counter = compareCounter(dir, r.Run)
	r.Checks = checks(&r, missing)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "node-check.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "node-check.md"), []byte(markdown(&r)), 0o644); err != nil {
		return err
	}
	return failures(r.Checks)
}

// counterAt is GPU 0's raw counter at boundary t of phase p: interpolated
// between the reads before and after the phase post when they bracket t,
// else the read after the post. lag is that read's time minus t.
func counterAt(dir string, p contract.Phase, t float64) (joules, lag float64, bracketed, ok bool) {
	var pre, post Counters
	if readJSON(dir, "counter."+string(p)+".json", &post) != nil || len(post.Joules) == 0 {
		return 0, 0, false, false
	}
	lag = post.Time - t
	if readJSON(dir, "counter."+string(p)+".pre.json", &pre) == nil && len(pre.Joules) > 0 && pre.Time <= t && t <= post.Time && pre.Time < post.Time {
		f := (t - pre.Time) / (post.Time - pre.Time)
		return pre.Joules[0] + f*(post.Joules[0]-pre.Joules[0]), lag, true, true
	}
	return post.Joules[0], lag, false, true
}

// compareCounter pairs GPU 0's raw counter at each phase's boundaries with
// the exporter's phase energy on GPU 0.
func compareCounter(dir string, st *phaseapi.RunStatus) []CounterCompare {
	var out []CounterCompare
	for k, ph := range st.Phases {
		if k+1 >= len(st.Phases) || len(ph.GPUs) == 0 {
			continue
		}
		next := st.Phases[k+1]
		a, startLag, bra, okA := counterAt(dir, ph.Phase, ph.Start)
		b, endLag, brb, okB := counterAt(dir, next.Phase, next.Start)
		if !okA || !okB {
			continue
		}
		c := CounterCompare{Phase: string(ph.Phase), Exporter: ph.GPUs[0].EnergyJoules, Counter: b - a,
			StartLag: startLag, EndLag: endLag, Bracketed: bra && brb}
		if c.Counter > 0 {
			c.DiffRatio = (c.Exporter - c.Counter) / c.Counter
		}
		out = append(out, c)
	}
	return out
}

func checks(r *Report, missing []string) []Check {
	sim := r.Facts.Backend == "sim"
	cs := []Check{{"inputs", len(missing) == 0, "missing: " + strings.Join(missing, "; ")}}
	if len(missing) == 0 {
		cs[0].Info = "every step wrote its result"
	}
	rel := r.Run.Release
	cs = append(cs, Check{"release_closed", rel.State == phaseapi.ReleaseClosed, fmt.Sprintf("release %s, closed by %s (%s)", rel.State, rel.ClosedBy, rel.Reason)})
	if !sim {
		end := math.NaN()
		if n := len(r.Run.Phases); n > 0 && r.Run.Phases[n-1].End != nil {
			end = *r.Run.Phases[n-1].End
		}
		cs = append(cs, Check{"release_after_engine_exit", end >= r.Load.Exited-0.5,
			fmt.Sprintf("release ended %.1f s after the stand-in engine's exit", end-r.Load.Exited)})
	}
	cs = append(cs, Check{"elapsed_under_4_min", r.Elapsed < 240, fmt.Sprintf("%.0f s", r.Elapsed)})
	return append(cs, judge(r)...)
}

func markdown(r *Report) string {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	f := r.Facts
	p("# joulemark node check\n\n")
	p("| fact | value |\n|---|---|\n| backend | %s |\n| driver | %s |\n| kernel module | %s |\n", f.Backend, f.DriverVersion, f.KernelModule)
	if ns := f.PIDNamespace; ns != nil {
		p("| PID namespace | %s (host's: %v, by %s) |\n", ns.Self, ns.Host, ns.Basis)
	}
	for _, g := range f.GPUs {
		p("| GPU %d | %s, persistence %s, MIG %s, compute mode %s |\n", g.Index, g.Name, g.Persistence, g.MIG, g.ComputeMode)
	}
	for _, pl := range r.Poll {
		p("\n## GPU %d: raw polling (%.1f s)\n\n| field | scope | reads | errors | updates | period ms (min–max) | mean W |\n|---|---|---|---|---|---|---|\n", pl.GPU, pl.Seconds)
		for _, fp := range pl.Fields {
			p("| %s | %s | %d | %d | %d | %.1f (%.1f–%.1f) | %.1f |\n", fp.Field, fp.Scope, fp.Reads, fp.Errors, fp.Updates, fp.PeriodMs, fp.MinMs, fp.MaxMs, fp.MeanW)
		}
		p("\ncounter: %.1f W; instant/counter %.4f\n\n| NVML call | calls | errors | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n", pl.CounterW, pl.BiasRatio)
		for _, l := range pl.Latencies {
			p("| %s | %d | %d | %.3f | %.3f | %.3f |\n", l.Call, l.Calls, l.Errs, l.P50ms, l.P99ms, l.Maxms)
		}
	}
	p("\n## Processes\n\nhost namespace %s: %v; own namespace %s: %v %s\n", r.ProcsHost.PIDNamespace, r.ProcsHost.PIDs, r.ProcsOwn.PIDNamespace, r.ProcsOwn.PIDs, r.ProcsNote)
	l := r.Load
	p("\n## Stand-in engine\n\n%s, pid %d, %.1f GiB, %d launches, busy %.1f s, held %.1f s\n", l.Backend, l.PID, float64(l.MemoryBytes)/(1<<30), l.Launches, l.BusySeconds, l.HoldSeconds)
	rel := r.Run.Release
	p("\n## Lifecycle\n\nrelease %s, closed by %s; ", rel.State, rel.ClosedBy)
	for _, c := range rel.Criteria {
		p("%s met %v (%s%s); ", c.Name, c.Met, c.Basis, c.Reason)
	}
	p("\n\n| phase | exporter J | counter J | difference | counter read lag at start, end | bracketed |\n|---|---|---|---|---|---|\n")
	for _, c := range r.Counter {
		p("| %s | %.1f | %.1f | %.3f%% | %.3f s, %.3f s | %v |\n", c.Phase, c.Exporter, c.Counter, 100*c.DiffRatio, c.StartLag, c.EndLag, c.Bracketed)
	}
	p("\n## Checks\n\n")
	for _, c := range r.Checks {
		p("- %s: %v — %s\n", c.Name, map[bool]string{true: "ok", false: "FAIL"}[c.OK], c.Info)
	}
	p("\nelapsed %.0f s\n", r.Elapsed)
	return b.String()
}
