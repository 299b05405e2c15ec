package analyze

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// writeFixtureArchive writes the fixture's requests as a run archive's
// requests.jsonl (no manifest) and returns its directory.
func writeFixtureArchive(t *testing.T, d *RunData) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), d.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, r := range d.Requests {
		slot := int(r.SlotRank)
		x := runarchive.Request{Phase: string(contract.Warmup), Slot: slot, SendTime: r.Send, EndTime: r.End, LatencySeconds: r.Latency,
			OutputTokens: int(r.OutputTokens), InputTokens: int(r.InputTokens), Success: r.Success, Index: i, TokensSource: runarchive.TokensUsage}
		if r.Formal {
			x.Phase = string(contract.Formal)
		}
		if r.HasTTFT {
			x.TTFTSeconds = new(r.TTFT)
		}
		line, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, runarchive.RequestsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRequestsRepairedFromArchive: a remote-write receiver acknowledged
// but dropped 40% of the per-request samples; with the run's archive the
// report counts every request (from the archive) and says so, and without
// the loss nothing changes.
func TestRequestsRepairedFromArchive(t *testing.T) {
	d := fixture()
	archive := writeFixtureArchive(t, d)
	for _, drop := range []bool{false, true} {
		s := startPromserver(t)
		samples := fixtureSamples(d)
		if drop {
			samples = slices.DeleteFunc(samples, func(x remotewrite.Sample) bool {
				return strings.HasPrefix(x.Labels["__name__"], "joulemark_request_") && x.TimestampMs/1000%5 < 2
			})
		}
		if err := s.AppendSamples(context.Background(), samples); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, _, err := Analyze(ctx, Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), Archive: archive})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		flagged := slices.Contains(flagCodes(r), contract.FlagRequestsArchiveMismatch)
		if flagged != drop || r.Requests.Started != 101 || r.Tokens.FormalOutput != 1000 {
			t.Errorf("samples dropped %v: flags %v, %d formal requests, %d output tokens; want flagged %v, 101 requests, 1000 tokens",
				drop, flagCodes(r), r.Requests.Started, r.Tokens.FormalOutput, drop)
		}
	}
}

// TestInterruptedRunEndsAtLastRequest: a run whose bench was killed at
// +90 s (its archive's status killed; runs finalize ended the exporter's
// formal phase 40 s later) gets a formal phase that ends at its last
// request, the killed flag and throughput over the load's span; aborted
// runs get the aborted warning; a completed run is untouched.
func TestInterruptedRunEndsAtLastRequest(t *testing.T) {
	d := fixture()
	d.Requests = slices.DeleteFunc(d.Requests, func(r Request) bool { return r.End > fixtureBase+90 })
	archive := writeFixtureArchive(t, d)
	run, err := runarchive.OpenDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	s := startPromserver(t)
	if err := s.AppendSamples(context.Background(), fixtureSamples(d)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status, flag string
		excluding    bool
		formalSecs   float64
	}{
		{runarchive.StatusKilled, contract.FlagKilled, true, 60},
		{runarchive.StatusAborted, contract.FlagAborted, false, 60},
		{runarchive.StatusCompleted, "", false, 100},
	} {
		if err := run.WriteManifest(&runarchive.Manifest{RunID: "fixture-1", Status: tc.status, Phases: map[string]float64{}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, _, err := Analyze(ctx, Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), Archive: archive})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var got *report.Flag
		for i := range r.Flags {
			if r.Flags[i].Code == contract.FlagKilled || r.Flags[i].Code == contract.FlagAborted {
				got = &r.Flags[i]
			}
		}
		switch {
		case tc.flag == "" && got != nil:
			t.Errorf("%s run flagged %+v", tc.status, *got)
		case tc.flag != "" && (got == nil || got.Code != tc.flag || got.Excluding != tc.excluding || !strings.Contains(got.Message, "40.0 s before")):
			t.Errorf("%s run: flag %+v, want %s (excluding %v) saying 40 s were cut", tc.status, got, tc.flag, tc.excluding)
		}
		if f := r.Stages["formal"].DurationSeconds; f != tc.formalSecs {
			t.Errorf("%s run: formal phase %v s, want %v", tc.status, f, tc.formalSecs)
		}
	}
}
