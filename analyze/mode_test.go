package analyze

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// attachedFixture is the fixture as an attached run (bench --engine.no-lifecycle)
// marks it: the formal phase only, no release verdict.
func attachedFixture(mode string) *RunData {
	d := fixture()
	for _, name := range []string{"idle", "startup", "warmup", "release"} {
		delete(d.Phases, name)
		delete(d.PhaseEnergy, name)
		delete(d.Host.PhaseEnergy, name)
	}
	d.ReleaseClosed = nil
	d.RunInfo.Mode = mode
	d.Requests = slices.DeleteFunc(d.Requests, func(r Request) bool { return !r.Formal })
	return d
}

// TestAttachedRunValid: an attached run is valid for what it measures
// (the cold-start run's steady state, throughput, latency, goodput, server
// view) and names startup, release and the full lifecycle "not measured"
// instead of flagging them; the same markers under a cold-start identity
// still exclude the run.
func TestAttachedRunValid(t *testing.T) {
	cold, _ := fixtureReport(t)
	if cold.Mode != contract.ModeLifecycle || len(cold.NotMeasured) != 0 || !cold.Valid {
		t.Fatalf("cold start: mode %q not_measured %v valid %v", cold.Mode, cold.NotMeasured, cold.Valid)
	}
	for _, tc := range []struct{ identity, source string }{
		{contract.ModeAttached, ModeFromIdentity},
		{"", ModeFromPhases}, // a bench from before run.mode
	} {
		r, _, err := computeSeries(attachedFixture(tc.identity), fixtureParams())
		if err != nil {
			t.Fatal(err)
		}
		if !r.Valid || len(r.Flags) != 0 {
			t.Errorf("identity mode %q: valid %v flags %v, want valid without flags", tc.identity, r.Valid, flagCodes(r))
		}
		if r.Mode != contract.ModeAttached || r.ModeSource != tc.source || !slices.Equal(r.NotMeasured, attachedNotMeasured) {
			t.Errorf("identity mode %q: mode %q from %q, not measured %v", tc.identity, r.Mode, r.ModeSource, r.NotMeasured)
		}
		if r.FullLifecycleJoulesPerToken != nil || r.Energy.StartupJoules != nil || r.Energy.ReleaseJoules != nil || r.LifecycleEstimate.FixedOverheadJoules != nil {
			t.Errorf("an attached run reports lifecycle figures: %+v %+v", r.Energy, r.LifecycleEstimate)
		}
		same := func(name string, a, b *float64) {
			if a == nil || b == nil || *a != *b {
				t.Errorf("%s: attached %v, cold start %v", name, fmtPtr(a), fmtPtr(b))
			}
		}
		same("steady-state J/token", r.SteadyState.JoulesPerToken, cold.SteadyState.JoulesPerToken)
		same("throughput", r.ThroughputTokensPerSecond, cold.ThroughputTokensPerSecond)
		same("TTFT p95", r.Latency.TTFTSeconds.P95, cold.Latency.TTFTSeconds.P95)
		same("goodput", r.Goodput.Ratio, cold.Goodput.Ratio)
		if r.Server == nil || !r.Server.Available {
			t.Error("no server view")
		}
		var md strings.Builder
		if err := WriteMarkdown(&md, r); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Mode: attached", "not measured: idle baseline, startup, release, full lifecycle", "| full-lifecycle J/token | not measured (attached run) |"} {
			if !strings.Contains(md.String(), want) {
				t.Errorf("report.md lacks %q", want)
			}
		}
	}
	// A quiet window before the load (bench setting engine.quiet_window): the idle
	// stage is measured and named for what it is; still valid.
	d := attachedFixture(contract.ModeAttached)
	fs := d.Phases["formal"].Start // the formal phase closes the quiet window
	d.Phases["idle"], d.PhaseEnergy["idle"] = PhaseBounds{Start: fs - 10, End: fs, HasStart: true, HasEnd: true}, 1000
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !r.Valid || r.Stages["idle"].EnergyJoules == nil || !strings.Contains(md.String(), "quiet window before the load") {
		t.Errorf("quiet window: valid %v flags %v idle %+v", r.Valid, flagCodes(r), r.Stages["idle"])
	}
	// The formal phase alone under a cold-start identity: markers lost.
	r, _, err = computeSeries(attachedFixture(contract.ModeLifecycle), fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid || !slices.Contains(flagCodes(r), contract.FlagPhaseMissing) || !slices.Contains(flagCodes(r), contract.FlagReleaseNotClosed) {
		t.Errorf("cold start without its lifecycle markers: valid %v flags %v", r.Valid, flagCodes(r))
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// fixtureArchive writes phases.json as the bench archives it for the
// fixture: one exporter's final view of the run, its exact boundaries,
// phase energies and release verdict (and an empty requests.jsonl); it
// returns the archive as analyze reads it.
func fixtureArchive(t *testing.T, d *RunData) *BenchArchive {
	t.Helper()
	run, err := runarchive.Create(t.TempDir(), d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	st := phaseapi.RunStatus{RunID: d.RunID, State: "ended"}
	for _, ph := range contract.Phases {
		name := string(ph)
		b := d.Phases[name]
		st.Phases = append(st.Phases, phaseapi.PhaseStatus{Phase: contract.Phase(name), Start: b.Start, End: new(b.End),
			EnergyJoules: d.PhaseEnergy[name], GPUs: []phaseapi.GPUEnergy{{GPU: 0, UUID: "GPU-0"}, {GPU: 1, UUID: "GPU-1"}}})
	}
	st.Release.Closed = d.ReleaseClosed
	ph := &runarchive.Phases{RunID: d.RunID, Exporters: []runarchive.ExporterStatus{{URL: "http://fixture:9400", Status: &st}}}
	if err := run.WritePhases(ph); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteFile(runarchive.RequestsFile, nil); err != nil {
		t.Fatal(err)
	}
	a, err := readBenchArchive(run, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOutageRepairedFromArchive: Prometheus lost every scraped run marker
// (phase boundaries, exporter phase energies, release verdict: an outage
// over the run's end, or analyze before the last scrape); with the bench
// archive's phases.json the report equals the one without the outage and
// says what it took from the archive (host energy aside). Without the
// archive the run is not found.
func TestOutageRepairedFromArchive(t *testing.T) {
	s := startPromserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lost := []string{contract.PhaseStart, contract.PhaseEnd, contract.PhaseEnergy, contract.RunReleaseClosed, contract.RunReleaseClosedBy}
	samples := slices.DeleteFunc(fixtureSamples(fixture()), func(s remotewrite.Sample) bool {
		return slices.Contains(lost, s.Labels["__name__"])
	})
	if err := s.AppendSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second, ReadAPI: remoteread.Query}
	cfg = cfg.withDefaults()
	if _, err := loadRun(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "run not found") {
		t.Fatalf("without the archive: %v, want run not found", err)
	}
	d, err := loadRun(ctx, cfg, fixtureArchive(t, fixture()))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Measurement.FromArchive) == 0 || !slices.Contains(r.Measurement.FromArchive, "release verdict") || !slices.Contains(r.Measurement.FromArchive, "formal start+end") {
		t.Errorf("from_archive %v", r.Measurement.FromArchive)
	}
	// Host (RAPL) phase energies are not archived: the host section,
	// reported beside the GPUs' and never added in, is not repaired.
	r.Measurement.FromArchive, r.HostEnergy = nil, nil
	js, _ := report.Marshal(r)
	want, _ := fixtureReport(t)
	want.HostEnergy = nil
	wantJS, _ := report.Marshal(want)
	sameJSON(t, js, wantJS)
}
