package analyze

import (
	"context"
	"fmt"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// loadRunInfo reads the run's joulemark_run_info labels into d (nil when the
// bench job pushed none, e.g. without remote write).
func (l *loader) loadRunInfo(ctx context.Context, d *RunData) error {
	vec, err := l.vector(ctx, l.lastOver(fmt.Sprintf("%s{%s}", contract.RunInfo, l.runSel())), l.now)
	if err != nil {
		return err
	}
	if len(vec) == 0 {
		return nil
	}
	// Several series (a re-push with other labels): the latest wins.
	best := vec[0]
	for _, s := range vec[1:] {
		if s.Timestamp > best.Timestamp {
			best = s
		}
	}
	lbls := map[string]string{}
	for k, v := range best.Metric {
		lbls[string(k)] = string(v)
	}
	info := contract.RunIdentityFromLabels(lbls)
	d.RunInfo = &info
	return nil
}

// runIdentity fills report.json "run" from the Prometheus run info.
func (c *computation) runIdentity() {
	if c.d.RunInfo != nil {
		c.r.Run = &report.RunIdentity{RunIdentity: *c.d.RunInfo, Source: "prometheus"}
	}
}

// identityLine is the report header's "what was tested" line.
func identityLine(id *report.RunIdentity) string {
	if id == nil {
		return "Run identity unknown (no joulemark_run_info in Prometheus and no archive manifest with run_info)."
	}
	i := id.RunIdentity
	eos := ""
	if i.IgnoreEOS {
		eos = ", ignore_eos"
	}
	digest := i.DatasetSHA256
	if len(digest) > 12 {
		digest = digest[:12]
	}
	rep := ""
	if i.RepetitionGroup != "" {
		rep = fmt.Sprintf(" · repetition %d of %d in group `%s`", i.Repetition, i.Repetitions, i.RepetitionGroup)
	}
	return fmt.Sprintf("Model `%s` · engine %s · %s · load %s · mean tokens in/out %.0f/%.0f%s · prompt set `%s`%s (from %s)",
		orDash(i.Model), i.EngineLabel(), i.Hardware(), orDash(i.Load()), i.MeanInputTokens, i.MeanOutputTokens, eos, orDash(digest), rep, id.Source)
}
