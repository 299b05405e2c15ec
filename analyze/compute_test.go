package analyze

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

func flagCodes(r *report.Report) []string {
	var c []string
	for _, f := range r.Flags {
		c = append(c, f.Code)
	}
	return c
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func TestComputeFixture(t *testing.T) {
	r, pd, err := computeSeries(fixture(), fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Valid || len(r.Flags) != 0 {
		t.Fatalf("valid = %v, flags %+v; want a valid run without flags", r.Valid, r.Flags)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"idle energy", val(r.Stages["idle"].EnergyJoules), 1000},
		{"idle exporter energy", val(r.Stages["idle"].ExporterEnergyJoules), 1000},
		{"formal energy", val(r.Energy.FormalJoules), 10000},
		{"startup energy (startup+warmup)", val(r.Energy.StartupJoules), 2000},
		{"release energy", val(r.Energy.ReleaseJoules), 1000},
		{"lifecycle energy", val(r.Energy.LifecycleJoules), 13000},
		{"formal avg power", val(r.Stages["formal"].AvgPowerWatts), 100},
		{"avg gpu power", val(r.AvgGPUPowerWatts), 100},
		{"started", float64(r.Requests.Started), 101},
		{"succeeded", float64(r.Requests.Succeeded), 100},
		{"error rate", r.Requests.ErrorRate, 1.0 / 101},
		{"formal output tokens", float64(r.Tokens.FormalOutput), 1000},
		{"formal input tokens", float64(r.Tokens.FormalInput), 2000},
		{"throughput", val(r.ThroughputTokensPerSecond), 10},
		{"full lifecycle J/token", val(r.FullLifecycleJoulesPerToken), 13},
		{"steady first", float64(*r.SteadyState.FirstRequest), 0},
		{"steady last", float64(*r.SteadyState.LastRequest), 99},
		{"steady energy", val(r.SteadyState.EnergyJoules), 10000},
		{"steady J/token", val(r.SteadyState.JoulesPerToken), 10},
		{"steady start", val(r.SteadyState.Start), fixtureBase + 30},
		{"steady end", val(r.SteadyState.End), fixtureBase + 130},
		{"unattributed", val(r.UnattributedJoules), 0},
		{"ttft p50", val(r.Latency.TTFTSeconds.P50), 0.1},
		{"tpot p90", val(r.Latency.TPOTSeconds.P90), 0.1},
		{"latency p95", val(r.Latency.LatencySeconds.P95), 1},
		{"good requests", float64(r.Goodput.GoodRequests), 100},
		{"goodput ratio (failed in denominator)", val(r.Goodput.Ratio), 100.0 / 101},
		{"J per good token", val(r.Goodput.JoulesPerGoodToken), 10},
		{"fixed overhead", val(r.LifecycleEstimate.FixedOverheadJoules), 3000},
		{"fixed overhead per request", val(r.LifecycleEstimate.FixedOverheadPerRequestJoules), 3000.0 / 101},
		{"per request", val(r.LifecycleEstimate.PerRequestJoules), 100},
		{"coverage", val(r.Measurement.CoverageRatio), 1},
		{"sample interval", val(r.Measurement.SampleIntervalSeconds), 1},
	}
	for _, c := range checks {
		if !near(c.got, c.want) && math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	// One failure in 101 requests: p99 (rank 100) is still a success.
	if r.Latency.LatencySeconds.P99 == nil {
		t.Error("latency p99 null; rank 100 of 101 is a success")
	}
	if len(pd.JoulesPerToken) != 100 || pd.SteadyFirst != 0 || len(pd.Power) != 2 {
		t.Errorf("plot data: %d J/token points, steady first %d, %d power series", len(pd.JoulesPerToken), pd.SteadyFirst, len(pd.Power))
	}
}

func TestComputeFlags(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *RunData, p *Params)
		want   []string
		valid  bool
	}{
		{"release not closed", func(d *RunData, p *Params) { d.ReleaseClosed = new(false) }, []string{contract.FlagReleaseNotClosed}, false},
		{"release unknown", func(d *RunData, p *Params) { d.ReleaseClosed = nil }, []string{contract.FlagReleaseNotClosed}, false},
		{"exporter energy 2% off", func(d *RunData, p *Params) { d.PhaseEnergy["formal"] = 10200 }, []string{contract.FlagEnergySourcesDisagree}, false},
		{"exporter energy 2% off in a stage holding an exporter restart is a warning", func(d *RunData, p *Params) {
			d.PhaseEnergy["formal"] = 10200
			f := d.Phases["formal"]
			d.ExporterRestarts = [][2]float64{{f.Start + 1, f.Start + 3}}
		}, []string{contract.FlagEnergySourcesDisagree}, true},
		{"an exporter restart in another stage leaves the check excluding", func(d *RunData, p *Params) {
			d.PhaseEnergy["formal"] = 10200
			i := d.Phases["idle"]
			d.ExporterRestarts = [][2]float64{{i.Start + 1, i.Start + 2}}
		}, []string{contract.FlagEnergySourcesDisagree}, false},
		{"exporter energy 0.5% off is fine", func(d *RunData, p *Params) { d.PhaseEnergy["formal"] = 10050 }, nil, true},
		{"gap in GPU 1's counter", func(d *RunData, p *Params) {
			g := &d.GPUs[1]
			g.Energy = slices.DeleteFunc(g.Energy, func(s Sample) bool { return s.T > fixtureBase+60 && s.T < fixtureBase+80 })
		}, []string{contract.FlagCoverageLow}, false},
		{"steady state not reached", func(d *RunData, p *Params) { p.SSWindow = 60 }, []string{contract.FlagTooFewRequests, contract.FlagSteadyStateNotReach}, false},
		{"error rate over threshold", func(d *RunData, p *Params) { p.MaxErrorRate = 0.005 }, []string{contract.FlagErrorRateHigh}, false},
		{"idle unstable is a warning", func(d *RunData, p *Params) {
			for k := range d.GPUs[0].Power[:8] {
				d.GPUs[0].Power[k].V = 60 + 20*float64(k%2)
			}
		}, []string{contract.FlagIdleUnstable}, true},
		{"release phase missing", func(d *RunData, p *Params) { delete(d.Phases, "release") }, []string{contract.FlagPhaseMissing}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, p := fixture(), fixtureParams()
			tt.mutate(d, &p)
			r, _, err := computeSeries(d, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := flagCodes(r); !slices.Equal(got, tt.want) {
				t.Errorf("flags %v, want %v (%+v)", got, tt.want, r.Flags)
			}
			if r.Valid != tt.valid {
				t.Errorf("valid = %v, want %v", r.Valid, tt.valid)
			}
		})
	}
}

func TestComputeGapStillInterpolates(t *testing.T) {
	// A counter gap inside the formal stage loses no energy: the counter
	// is cumulative, so interpolating across the gap still sums to 10000 J.
	d := fixture()
	g := &d.GPUs[1]
	g.Energy = slices.DeleteFunc(g.Energy, func(s Sample) bool { return s.T > fixtureBase+60 && s.T < fixtureBase+80 })
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if got := val(r.Energy.FormalJoules); !near(got, 10000) {
		t.Errorf("formal energy across a gap = %g, want 10000", got)
	}
	if got := val(r.Measurement.CoverageRatio); !near(got, 1-20.0/140) {
		t.Errorf("coverage = %g, want %g", got, 1-20.0/140)
	}
}

func TestComputeNoPhases(t *testing.T) {
	d := fixture()
	d.Phases = nil
	if _, _, err := computeSeries(d, fixtureParams()); err == nil {
		t.Fatal("no error for a run without phases")
	}
}

func TestParamsValidate(t *testing.T) {
	bad := []func(*Params){
		func(p *Params) { p.SSWindow = 1 },
		func(p *Params) { p.SSWindows = 0 },
		func(p *Params) { p.SSCV = 0 },
		func(p *Params) { p.SLOTTFT = -1 },
		func(p *Params) { p.MaxErrorRate = 2 },
	}
	for i, m := range bad {
		p := DefaultParams()
		m(&p)
		if p.Validate() == nil {
			t.Errorf("case %d: invalid params accepted: %+v", i, p)
		}
	}
	if err := DefaultParams().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

// TestComputeRunIDReused: a phase started twice, or phases out of
// lifecycle order, mean more than one lifecycle under the id: the report
// is invalid, flag run_id_reused, never a silent mix.
func TestComputeRunIDReused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(d *RunData)
	}{
		{"idle started twice", func(d *RunData) { d.RestartedPhases = []string{"idle"} }},
		{"formal after the release ended", func(d *RunData) {
			rel := d.Phases["release"]
			d.Phases["formal"] = PhaseBounds{Start: rel.End + 60, HasStart: true}
		}},
		{"idle after the formal", func(d *RunData) {
			f := d.Phases["formal"]
			d.Phases["idle"] = PhaseBounds{Start: f.Start + 30, HasStart: true, End: f.Start + 50, HasEnd: true}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fixture()
			tc.mutate(d)
			r, _, err := computeSeries(d, fixtureParams())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(flagCodes(r), contract.FlagRunIDReused) || r.Valid {
				t.Errorf("flags %v, valid %v; want run_id_reused, invalid", flagCodes(r), r.Valid)
			}
		})
	}
	r, _, _ := computeSeries(fixture(), fixtureParams())
	if slices.Contains(flagCodes(r), contract.FlagRunIDReused) {
		t.Errorf("one clean lifecycle flagged: %+v", r.Flags)
	}
}

// The stage table's energy and the figure beside it are the two sources
// the difference is taken from: a stage whose sources disagree shows two
// different figures and the difference between them, never one figure
// twice beside a non-zero difference.
func TestStageTableShowsBothSources(t *testing.T) {
	d := fixture()
	d.PhaseEnergy["formal"] = 10200 // the counter says 10000 J
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	var row []string
	for l := range strings.SplitSeq(md.String(), "\n") {
		if strings.HasPrefix(l, "| formal | 20") {
			row = strings.Split(l, " | ")
		}
	}
	if len(row) < 7 {
		t.Fatalf("no formal row in the stage table:\n%s", md.String())
	}
	energy, beside, diff := row[3], row[4], row[5]
	if energy != "10200.0 J" || beside != "10000.0 J" || diff != "1.96%" {
		t.Errorf("formal row: energy %q, beside it %q, difference %q; want 10200.0 J, 10000.0 J, 1.96%%", energy, beside, diff)
	}
}
