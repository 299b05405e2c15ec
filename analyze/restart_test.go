package analyze

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// TestExporterGapsFlagged: a gap in an exporter's final status (it
// restarted mid-run) becomes a non-excluding exporter_restarted flag with
// its interval, and a measurement gap.
func TestExporterGapsFlagged(t *testing.T) {
	run, err := runarchive.Create(t.TempDir(), "gap-1")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := computeSeries(fixture(), fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.ReadPhases(); !errors.Is(err, runarchive.ErrNoPhases) {
		t.Fatalf("ReadPhases without phases.json: %v, want ErrNoPhases", err)
	}
	if addExporterGaps(r, nil); slices.Contains(flagCodes(r), contract.FlagExporterRestarted) {
		t.Fatalf("without phases.json: flags %v", flagCodes(r))
	}
	doc := map[string]any{"run_id": "gap-1", "exporters": []any{
		map[string]any{"url": "http://node-a:9402", "status": phaseapi.RunStatus{RunID: "gap-1",
			Gaps: []phaseapi.Gap{{Start: fixtureBase + 40, End: fixtureBase + 47.5, Reason: contract.GapExporterRestarted}}}},
		map[string]any{"url": "http://node-b:9402", "status": phaseapi.RunStatus{RunID: "gap-1", CoTenants: []string{"batch/job"}}},
	}}
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(run.Path(runarchive.PhasesFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	valid := r.Valid
	addExporterGaps(r, readViews(t, run))
	var msg string
	for _, f := range r.Flags {
		if f.Code == contract.FlagExporterRestarted {
			msg = f.Message
			if f.Excluding {
				t.Error("exporter_restarted excludes the run; coverage decides that")
			}
		}
	}
	if !strings.Contains(msg, "http://node-a:9402") || !strings.Contains(msg, "7.5 s") || !valid || r.Valid {
		t.Errorf("flag message %q (valid %v→%v), want node-a's 7.5 s gap, the run invalid by gpu_shared alone", msg, valid, r.Valid)
	}
	if i := slices.IndexFunc(r.Flags, func(f report.Flag) bool { return f.Code == contract.FlagGPUShared }); i < 0 || !r.Flags[i].Excluding ||
		!strings.Contains(r.Flags[i].Message, "node-b") || !strings.Contains(r.Flags[i].Message, "batch/job") {
		t.Errorf("flags %+v: want an excluding gpu_shared naming node-b's co-tenant batch/job", r.Flags)
	}
	last := r.Measurement.Gaps[len(r.Measurement.Gaps)-1]
	if last.Series != "exporter" || last.Start != fixtureBase+40 || last.End != fixtureBase+47.5 {
		t.Errorf("measurement gap %+v", last)
	}
}

// TestReleaseProcessBasis: release.process_basis is the weakest basis over
// the exporters' closed releases in phases.json; an unverified one is a
// non-excluding release_process_unverified flag, and the markdown says it.
func TestReleaseProcessBasis(t *testing.T) {
	status := func(basis string) phaseapi.RunStatus {
		return phaseapi.RunStatus{RunID: "b-1", Release: phaseapi.ReleaseStatus{State: phaseapi.ReleaseClosed, Criteria: []phaseapi.ReleaseCriterion{
			{Name: phaseapi.CriterionProcess, Met: true, Basis: basis}, {Name: phaseapi.CriterionPower, Met: true}}}}
	}
	for _, tc := range []struct {
		name   string
		bases  []string
		want   string
		flag   bool
		inText string
	}{
		{"bench report", []string{phaseapi.BasisEngineExit, phaseapi.BasisEngineExit}, phaseapi.BasisEngineExit, false, "reported by the bench"},
		{"one exporter from NVML", []string{phaseapi.BasisEngineExit, phaseapi.BasisNVML}, phaseapi.BasisNVML, false, "NVML's process list"},
		{"one unverified", []string{phaseapi.BasisUnverified, phaseapi.BasisNVML}, phaseapi.BasisUnverified, true, "the engine's exit unverified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := runarchive.Create(t.TempDir(), "b-1")
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := computeSeries(fixture(), fixtureParams())
			if err != nil {
				t.Fatal(err)
			}
			var exps []any
			for i, b := range tc.bases {
				exps = append(exps, map[string]any{"url": "http://node-" + string(rune('a'+i)) + ":9402", "status": status(b)})
			}
			b, _ := json.Marshal(map[string]any{"run_id": "b-1", "exporters": exps})
			if err := os.WriteFile(run.Path(runarchive.PhasesFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			valid := r.Valid
			addReleaseBasis(r, readViews(t, run))
			if r.Release.ProcessBasis != tc.want || slices.Contains(flagCodes(r), contract.FlagReleaseProcessUnverified) != tc.flag || r.Valid != valid {
				t.Errorf("basis %q flags %v valid %v→%v; want %q, flag %v", r.Release.ProcessBasis, flagCodes(r), valid, r.Valid, tc.want, tc.flag)
			}
			var md strings.Builder
			if err := WriteMarkdown(&md, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(md.String(), tc.inText) {
				t.Errorf("markdown lacks %q", tc.inText)
			}
		})
	}
}

// readViews reads the exporters' views from run's phases.json.
func readViews(t *testing.T, run *runarchive.Run) []runarchive.ExporterStatus {
	t.Helper()
	ph, err := run.ReadPhases()
	if err != nil {
		t.Fatal(err)
	}
	return ph.Exporters
}

// TestExporterGPUGapFlagged: a GPU's own gap (it did not open at the
// exporter's restart) is flagged naming the GPU and how long it was
// missing, not as the exporter being down; its measurement gap names the
// GPU.
func TestExporterGPUGapFlagged(t *testing.T) {
	st := &phaseapi.RunStatus{RunID: "g-1", GPUs: []phaseapi.GPUInfo{{GPU: 0}, {GPU: 1}}, Gaps: []phaseapi.Gap{
		{Start: 100, End: 105, Reason: contract.GapExporterRestarted, EnergyBridgedGPUs: []int{0}},
		{Start: 100, End: 130.5, Reason: contract.GapExporterRestarted, GPUs: []int{1}},
	}}
	r := &report.Report{}
	addExporterGaps(r, []runarchive.ExporterStatus{{URL: "http://node-a:9402", Status: st}})
	if len(r.Flags) != 2 || len(r.Measurement.Gaps) != 2 {
		t.Fatalf("flags %+v, gaps %+v: want one per gap", r.Flags, r.Measurement.Gaps)
	}
	for _, tc := range []struct {
		msg        string
		want, dont []string
	}{
		{r.Flags[0].Message, []string{"node-a:9402 was down", "5.0 s", "GPU 0 came from their own energy counters", "none was measured on GPU 1"}, nil},
		{r.Flags[1].Message, []string{"GPU 1 was not open after its restart", "30.5 s", "no energy was measured there"}, []string{"was down", "GPU 0"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.msg, w) {
				t.Errorf("message %q lacks %q", tc.msg, w)
			}
		}
		for _, d := range tc.dont {
			if strings.Contains(tc.msg, d) {
				t.Errorf("message %q has %q", tc.msg, d)
			}
		}
	}
	if g := r.Measurement.Gaps[1]; g.GPU != "http://node-a:9402 gpu 1" || g.End-g.Start != 30.5 {
		t.Errorf("measurement gap %+v: want GPU 1's 30.5 s", g)
	}
}

// TestGPUFailedFlagged: a GPU that stopped answering while the exporter
// ran (gaps gpu_failed, gpu_hung) is flagged gpu_failed naming the GPU and
// its interval; it excludes the run when the gap overlaps the formal phase
// unbridged, never when its own counter bridged it or it lies outside.
func TestGPUFailedFlagged(t *testing.T) {
	gpus := []phaseapi.GPUInfo{{GPU: 0}, {GPU: 1}}
	for _, tc := range []struct {
		name string
		gap  phaseapi.Gap
		excl bool
		want string
	}{
		{"failed in formal", phaseapi.Gap{Start: 110, End: 130, Reason: contract.GapGPUFailed, GPUs: []int{1}}, true, "the reads of GPU 1 failed"},
		{"hung in formal", phaseapi.Gap{Start: 150, End: 170, Reason: contract.GapGPUHung, GPUs: []int{1}, Open: true}, true, "the reads of GPU 1 hung"},
		{"bridged", phaseapi.Gap{Start: 110, End: 112, Reason: contract.GapGPUFailed, GPUs: []int{1}, EnergyBridgedGPUs: []int{1}}, false, "the reads of GPU 1 failed"},
		{"in release", phaseapi.Gap{Start: 210, End: 230, Reason: contract.GapGPUFailed, GPUs: []int{0}}, false, "the reads of GPU 0 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report.Report{Valid: true, Stages: map[string]report.Stage{string(contract.Formal): {Start: 100, End: 200}}}
			st := &phaseapi.RunStatus{RunID: "f-1", GPUs: gpus, Gaps: []phaseapi.Gap{tc.gap}}
			addExporterGaps(r, []runarchive.ExporterStatus{{URL: "http://node-a:9402", Status: st}})
			if len(r.Flags) != 1 || r.Flags[0].Code != contract.FlagGPUFailed {
				t.Fatalf("flags %+v: want one gpu_failed", r.Flags)
			}
			f := r.Flags[0]
			if f.Excluding != tc.excl || r.Valid == tc.excl || !strings.Contains(f.Message, tc.want) || !strings.Contains(f.Message, "20.0 s") && tc.name != "bridged" {
				t.Errorf("flag %+v, valid %v: want excluding %v, a message naming %q and the interval", f, r.Valid, tc.excl, tc.want)
			}
			if g := r.Measurement.Gaps[0]; g.Start != tc.gap.Start || g.End != tc.gap.End || !strings.HasSuffix(g.GPU, "gpu "+strings.TrimPrefix(tc.want, "the reads of GPU ")[:1]) {
				t.Errorf("measurement gap %+v", g)
			}
		})
	}
}
