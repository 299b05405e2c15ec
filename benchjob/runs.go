package benchjob

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// FinalizeResult is what Finalize did to a killed run.
type FinalizeResult struct {
	Manifest *runarchive.Manifest
	// EngineKilled is true when the run's engine process group was still
	// alive and was killed.
	EngineKilled bool
	// Exporters is each exporter's final status of the run (ended), by base
	// URL; ExporterErrors those that could not end it.
	Exporters      map[string]*phaseapi.RunStatus
	ExporterErrors map[string]error
}

// Finalize finishes a run whose bench died (SIGKILL, crash): it kills the
// engine process group the run left (engine.pid), turns the archive final
// with status killed (requests.jsonl.partial becomes requests.jsonl), and
// ends the run on every exporter the manifest names (GPUs by exporter URL;
// urls, when given, instead) through clients. A run that already ended is
// refused (runarchive.ErrFinal), so is one whose bench still runs
// (ErrBenchAlive).
func Finalize(ctx context.Context, runsDir, id string, urls []string, clients func(url string) (*phaseapi.Client, error)) (*FinalizeResult, error) {
	run, err := runarchive.Open(runsDir, id)
	if err != nil {
		return nil, err
	}
	m, err := run.ReadManifest()
	if err != nil {
		return nil, err
	}
	if runarchive.Final(m.Status) {
		return nil, fmt.Errorf("run %s: status %s: %w", id, m.Status, runarchive.ErrFinal)
	}
	if err := checkBenchGone(run.Dir, m); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	res := &FinalizeResult{Exporters: map[string]*phaseapi.RunStatus{}, ExporterErrors: map[string]error{}}
	if res.EngineKilled, err = ReapEngine(run.Dir); err != nil {
		return nil, err
	}
	if len(urls) == 0 {
		for u := range m.GPUs {
			urls = append(urls, u)
		}
		sort.Strings(urls)
	}
	for _, u := range urls {
		c, err := clients(u)
		if err != nil {
			res.ExporterErrors[u] = err
			continue
		}
		var st *phaseapi.RunStatus
		err = retryExporter(30*time.Second, func(ctx context.Context) error {
			var err error
			st, err = c.EndRun(ctx, id)
			return err
		}, func(error, time.Duration) {})
		switch {
		case err == nil:
			res.Exporters[u] = st
		case phaseapi.IsStatus(err, http.StatusNotFound):
			// never started there, or already ended and dropped: nothing to end
		default:
			res.ExporterErrors[u] = err
		}
	}
	reason := "the bench died without ending the run; finalized by joulemark runs finalize"
	if res.Manifest, err = run.FinalizeKilled(reason, time.Now()); err != nil {
		return res, err
	}
	return res, nil
}

// PushResult is what Push sent.
type PushResult struct {
	Requests int               // records read from the archive and pushed
	Samples  int               // samples sent
	Stats    remotewrite.Stats // what the target acknowledged and what was lost
	// Skipped are the records left out as implausible (checkPushed), by
	// line of requests.jsonl.
	Skipped []SkippedRequest
}

// SkippedRequest is an archived request runs push left out, and why.
type SkippedRequest struct {
	Line int
	Why  string
}

// pushSlack widens a run's span (created to ended) for its requests' times.
const pushSlack = time.Minute

// checkPushed says why an archived request cannot be pushed ("" when it
// can): a time not finite or outside [from, to], a negative or non-finite
// duration, a token count outside [0, contract.MaxRequestTokens]. One such
// sample makes a receiver refuse its whole batch ("out of bounds").
func checkPushed(r *runarchive.Request, from, to float64) string {
	for _, f := range []struct {
		name string
		v    float64
	}{{"send_time", r.SendTime}, {"end_time", r.EndTime}} {
		if !finite(f.v) || f.v < from || f.v > to {
			return fmt.Sprintf("%s %g outside the run (%.0f to %.0f)", f.name, f.v, from, to)
		}
	}
	durs := []struct {
		name string
		v    *float64
	}{{"latency_seconds", &r.LatencySeconds}, {"ttft_seconds", r.TTFTSeconds}}
	for _, d := range durs {
		if d.v != nil && (!finite(*d.v) || *d.v < 0) {
			return fmt.Sprintf("%s %g: want a finite duration, not negative", d.name, *d.v)
		}
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"output_tokens", r.OutputTokens}, {"input_tokens", r.InputTokens}} {
		if c.v < 0 || c.v > contract.MaxRequestTokens {
			return fmt.Sprintf("%s %d: want 0 to %d", c.name, c.v, contract.MaxRequestTokens)
		}
	}
	return ""
}

// pushSpan is the span a run's requests lie in: its manifest's created to
// ended (now while it has not ended), widened by pushSlack.
func pushSpan(m *runarchive.Manifest) (from, to float64) {
	to = m.Ended
	if to == 0 {
		to = unixSeconds(time.Now())
	}
	return m.Created - pushSlack.Seconds(), to + pushSlack.Seconds()
}

// Push re-sends a run's per-request samples (one group per record of
// requests.jsonl, warm-up included), its run identity and its final
// aggregates to a remote-write target, with their original timestamps and
// values (sampleMs of the archived instants; the final aggregates and run
// identity at the manifest's samples_at, their gauges from its load
// section): the same samples the run pushed, so pushing twice, or to a
// server that got the run's own samples, changes nothing. Samples
// older than what the target already holds of a series are out of order
// for Prometheus unless its out_of_order_time_window covers them.
func Push(ctx context.Context, runsDir, id string, rw remotewrite.Config, log *slog.Logger) (*PushResult, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	run, err := runarchive.Open(runsDir, id)
	if err != nil {
		return nil, err
	}
	m, err := run.ReadManifest()
	if err != nil {
		return nil, err
	}
	var samples []remotewrite.Sample
	agg := newAggregates(id)
	var last float64
	n := 0
	var skipped []SkippedRequest
	from, to := pushSpan(m)
	err = run.EachRequest(func(line int, r *runarchive.Request) error {
		if why := checkPushed(r, from, to); why != "" {
			skipped = append(skipped, SkippedRequest{Line: line, Why: why})
			return nil
		}
		samples = append(samples, requestSamples(r, id)...)
		agg.observe(r)
		last = max(last, r.EndTime)
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		logSkipped(log, id, skipped)
	}
	if n == 0 {
		return &PushResult{Skipped: skipped}, fmt.Errorf("run %s: no request records to push (%d left out as implausible)", id, len(skipped))
	}
	// The final samples' instant as the bench stamped them; older archives
	// lack it: the run's end, else its last request's.
	at := m.SamplesAt
	if at == 0 {
		at = m.Ended
	}
	if at == 0 {
		at = last
	}
	agg.settle(m.Load)
	as, err := agg.samples(sampleMs(at))
	if err != nil {
		return nil, err
	}
	samples = append(samples, as...)
	if m.RunInfo != nil {
		samples = append(samples, runInfoSamples(*m.RunInfo, m.Phases[string(contract.Formal)], at)...)
	}
	// Each series in time order, as remote write expects.
	slices.SortStableFunc(samples, func(a, b remotewrite.Sample) int { return int(a.TimestampMs - b.TimestampMs) })
	if rw.UserAgent == "" {
		rw.UserAgent = "joulemark-runs-push"
	}
	rw.BufferSize = max(rw.BufferSize, len(samples)+1) // every sample fits: none dropped
	w, err := remotewrite.New(rw, log)
	if err != nil {
		return nil, err
	}
	for _, s := range samples {
		w.Append(s)
	}
	st, err := w.Close(ctx)
	res := &PushResult{Requests: n, Samples: len(samples), Stats: st, Skipped: skipped}
	if err != nil {
		return res, fmt.Errorf("pushing run %s to %s: %w", id, secretfile.RedactURL(rw.URL), err)
	}
	return res, nil
}

// logSkipped warns of the records Push left out, naming the first lines.
func logSkipped(log *slog.Logger, id string, skipped []SkippedRequest) {
	const shown = 10
	for _, sk := range skipped[:min(len(skipped), shown)] {
		log.Warn("runs push: request left out as implausible", "run_id", id, "file", runarchive.RequestsFile, "line", sk.Line, "why", sk.Why)
	}
	if len(skipped) > shown {
		log.Warn("runs push: more requests left out as implausible", "run_id", id, "more", len(skipped)-shown)
	}
}
