package analyze

import (
	"fmt"

	"github.com/joulemark/joulemark/report"
)

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
