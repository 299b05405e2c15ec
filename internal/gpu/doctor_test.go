package gpu

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
)

// TestDoctorSimCounterPeriod: the doctor measures the simulated counter's
// configured period and jitter (uniform ±4 ms: a standard deviation of
// 4·√(2/3) ≈ 3.3 ms between updates).
func TestDoctorSimCounterPeriod(t *testing.T) {
	clk := fakeclock.New()
	sim, err := NewSim(SimConfig{GPUs: 2, EnergyCounter: true, CounterPeriod: 100 * time.Millisecond, CounterJitter: 4 * time.Millisecond, Seed: 5, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	r := Doctor(sim, DoctorOptions{Duration: 5 * time.Second, Poll: time.Millisecond, Clock: clk, Sleep: clk.Advance})
	if r.Backend != "sim" || len(r.GPUs) != 2 || r.Verdict != VerdictOK {
		t.Fatalf("report %+v", r)
	}
	for _, g := range r.GPUs {
		c := g.Counter
		if c == nil || c.Updates < 45 || math.Abs(c.PeriodSeconds-0.1) > 0.002 || c.JitterSeconds < 0.0025 || c.JitterSeconds > 0.0045 {
			t.Errorf("gpu %d counter %+v, want ~100 ms period, ~3.3 ms jitter", g.Index, c)
		}
		if g.Latency.Calls < 4000 || g.Latency.P50Seconds > g.Latency.P99Seconds {
			t.Errorf("gpu %d latency %+v", g.Index, g.Latency)
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"energy counter", "period 10", "[ok]", "verdict  ok"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"period_seconds"`) {
		t.Errorf("json %s %v", b, err)
	}
}

// TestDoctorNoCounter: without a counter the check is skipped, energy
// integration is a warning.
func TestDoctorNoCounter(t *testing.T) {
	clk := fakeclock.New()
	sim, _ := NewSim(SimConfig{Clock: clk})
	r := Doctor(sim, DoctorOptions{Duration: time.Second, Clock: clk, Sleep: clk.Advance})
	checks := map[string]string{}
	for _, c := range r.GPUs[0].Checks {
		checks[c.Name] = c.Verdict
	}
	if checks["counter_period"] != VerdictSkip || checks["energy_counter"] != VerdictWarn || r.Verdict != VerdictWarn {
		t.Errorf("checks %v, verdict %s", checks, r.Verdict)
	}
}

func TestDriverCheck(t *testing.T) {
	for v, want := range map[string]string{"550.54.15": VerdictOK, "535.104.05": VerdictOK, "525.60.13": VerdictWarn, "460.1": VerdictFail, "x": VerdictWarn} {
		if got := driverCheck("nvml", v).Verdict; got != want {
			t.Errorf("driver %s: %s, want %s", v, got, want)
		}
	}
}

// TestDoctorPIDNamespace: outside the host's PID namespace the doctor warns
// that the process lists are blind, on the report and on each GPU's
// process_query, instead of calling them ok.
func TestDoctorPIDNamespace(t *testing.T) {
	clk := fakeclock.New()
	sim, err := NewSim(SimConfig{GPUs: 1, EnergyCounter: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []bool{true, false} {
		ns := &PIDNamespace{Host: host, Self: "pid:[4026532000]", HostNS: initPIDNamespace, Basis: "test"}
		r := Doctor(sim, DoctorOptions{Duration: 100 * time.Millisecond, Poll: time.Millisecond, Clock: clk, Sleep: clk.Advance, PIDNamespace: ns})
		want := map[bool]string{true: VerdictOK, false: VerdictWarn}[host]
		var got, pq string
		for _, c := range r.Checks {
			if c.Name == "pid_namespace" {
				got = c.Verdict
			}
		}
		for _, c := range r.GPUs[0].Checks {
			if c.Name == "process_query" {
				pq = c.Verdict + ": " + c.Detail
			}
		}
		if got != want || !strings.HasPrefix(pq, want) || (!host && !strings.Contains(pq, "blind")) {
			t.Errorf("host PID namespace %v: pid_namespace %q, process_query %q; want %s", host, got, pq, want)
		}
	}
}
