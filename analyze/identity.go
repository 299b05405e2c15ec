package analyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/joulemark/joulemark/runinfo"
)

// RunIdentity is report.json "run": what was tested, from the bench job's
// joulemark_run_info (Prometheus) or, failing that, its archive's
// manifest.json; Source says which.
type RunIdentity struct {
	runinfo.Info
	Source string `json:"source"` // prometheus or archive
}

// loadRunInfo reads the run's joulemark_run_info labels into d (nil when the
// bench job pushed none, e.g. without remote write).
func (l *loader) loadRunInfo(ctx context.Context, d *RunData) error {
	vec, err := l.vector(ctx, l.lastOver(fmt.Sprintf("%s{%s}", runinfo.Metric, l.runSel())), l.now)
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
	info := runinfo.FromLabels(lbls)
	d.RunInfo = &info
	return nil
}

// archiveRunInfo reads run_info from dir/manifest.json; nil when the
// manifest or its run_info is absent.
func archiveRunInfo(dir string) (*runinfo.Info, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run identity: %w", err)
	}
	var m struct {
		RunInfo *runinfo.Info `json:"run_info"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("reading the run identity from %s: %w", path, err)
	}
	return m.RunInfo, nil
}

// runIdentity fills report.json "run" from the Prometheus run info.
func (c *computation) runIdentity() {
	if c.d.RunInfo != nil {
		c.r.Run = &RunIdentity{Info: *c.d.RunInfo, Source: "prometheus"}
	}
}

// identityLine is the report header's "what was tested" line.
func identityLine(id *RunIdentity) string {
	if id == nil {
		return "Run identity unknown (no joulemark_run_info in Prometheus and no archive manifest with run_info)."
	}
	i := id.Info
	eng := orDash(i.Engine)
	if i.EngineVersion != "" {
		eng += " " + i.EngineVersion
	}
	eos := ""
	if i.IgnoreEOS {
		eos = ", ignore_eos"
	}
	digest := i.DatasetSHA256
	if len(digest) > 12 {
		digest = digest[:12]
	}
	return fmt.Sprintf("Model `%s` · engine %s · %d × %s · load %s · mean tokens in/out %.0f/%.0f%s · prompt set `%s` (from %s)",
		orDash(i.Model), eng, i.GPUs, orDash(i.GPUName), orDash(i.Load()), i.MeanInputTokens, i.MeanOutputTokens, eos, orDash(digest), id.Source)
}
