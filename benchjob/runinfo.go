package benchjob

import (
	"fmt"
	"math"
	"os"

	"github.com/joulemark/joulemark/benchjob/quality"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// runInfo is the run's identity as the report and the comparisons key it.
// Token lengths are the configured means for synthetic prompts, else the
// measured means of the successful formal requests, rounded to whole tokens
// so repeats of one configuration share them.
func (r *runner) runInfo(formal runarchive.Summary) contract.RunIdentity {
	c := &r.cfg
	info := contract.RunIdentity{
		RunID: r.runID, Model: r.model, Engine: r.engineName, EngineVersion: c.Engine.Version, Scenario: c.Scenario,
		LoadMode: r.rec.man.Load.Mode, Concurrency: c.Concurrency, Rate: c.Rate,
		IgnoreEOS:     c.Extras.IgnoreEOS != nil && *c.Extras.IgnoreEOS,
		DatasetSHA256: r.datasetDigest, Mode: contract.ModeLifecycle,
		RepetitionGroup: c.repetition.group, Repetition: c.repetition.index, Repetitions: c.repetition.of,
	}
	if c.Engine.NoLifecycle {
		info.Mode = contract.ModeAttached
	}
	if info.EngineVersion == "" {
		info.EngineVersion = r.rec.man.Engine.ReportedVer
	}
	var names []string
	for _, u := range c.Exporters {
		for _, g := range r.rec.man.GPUs[u] {
			names = append(names, g.Name)
			info.GPUs++
		}
	}
	if info.GPUs == 0 {
		for _, gs := range r.rec.man.GPUs { // keyed by the client's normalized base URL
			for _, g := range gs {
				names = append(names, g.Name)
				info.GPUs++
			}
		}
	}
	info.GPUName = contract.JoinGPUNames(names)
	w := c.Workload
	if w.Dataset == "" && w.Trace == "" {
		info.MeanInputTokens, info.MeanOutputTokens = float64(w.MeanInputTokens), float64(w.MeanOutputTokens)
	} else if formal.Succeeded > 0 {
		info.MeanInputTokens = math.Round(float64(formal.InputTokens) / float64(formal.Succeeded))
		info.MeanOutputTokens = math.Round(float64(formal.OutputTokens) / float64(formal.Succeeded))
	}
	return info
}

// workloadDigest identifies the prompt set independently of how many
// prompts a run sent: the SHA-256 of the dataset or trace file, or of the
// synthetic generator's parameters (same parameters and seed, same prompts).
func workloadDigest(w Workload) (string, error) {
	for _, f := range []string{w.Dataset, w.Trace} {
		if f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("hashing the workload %s: %w", f, err)
			}
			return sha256Hex(b), nil
		}
	}
	if w.Kind == contract.WorkloadCorrectness {
		return sha256Hex(fmt.Appendf(nil, "correctness v1 seed=%d", w.Seed)), nil
	}
	return sha256Hex(fmt.Appendf(nil, "synthetic v1 mean_input_tokens=%d stddev_input_tokens=%d mean_output_tokens=%d stddev_output_tokens=%d seed=%d",
		w.MeanInputTokens, w.StddevInputTokens, w.MeanOutputTokens, w.StddevOutputTokens, w.Seed)), nil
}

// runInfoSamples are joulemark_run_info 1 at the formal phase's start (the
// manifest's phase_starts.formal) and at the run's final samples (its
// samples_at), both unix seconds (0: none), so the identity spans the run
// in Prometheus.
func runInfoSamples(info contract.RunIdentity, formalStart, at float64) []remotewrite.Sample {
	var out []remotewrite.Sample
	for _, sec := range []float64{formalStart, at} {
		if sec <= 0 {
			continue
		}
		l := info.Labels()
		l["__name__"] = contract.RunInfo
		out = append(out, remotewrite.Sample{Labels: l, Value: 1, TimestampMs: sampleMs(sec)})
	}
	return out
}

// mergeChecks applies both rubrics (either may be nil).
func mergeChecks(a, b *quality.Check) *quality.Check {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return quality.Merge(a, b)
}
