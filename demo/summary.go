package demo

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/report"
)

// writeSummary prints the report's summary table and where everything is.
func writeSummary(w io.Writer, res *Result) error {
	fmt.Fprintln(w)
	if err := analyze.WriteSummary(w, res.Report); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Report:      %s (report.md, report.json beside it)\n", filepath.Join(res.ReportDir, report.FileHTML))
	fmt.Fprintf(w, "Run archive: %s (manifest.json, requests.jsonl, engine.log; compare, pareto and plan read it)\n", res.Dir)
	fmt.Fprintf(w, "Dashboards:  %s (import into Grafana with a Prometheus data source)\n", res.DashboardsDir)
	if res.TSDBDir != "" {
		fmt.Fprintf(w, "TSDB data:   %s\n", res.TSDBDir)
		fmt.Fprintf(w, "Reopen it:   joulemark tsdb serve --storage.tsdb.path %s   (Prometheus API on http://127.0.0.1:9090)\n", res.TSDBDir)
		fmt.Fprintf(w, "Re-analyze:  joulemark analyze --prometheus.url http://127.0.0.1:9090 --run-id %s --runs-dir %s --out %s\n",
			res.RunID, filepath.Dir(res.Dir), filepath.Join(res.Dir, "report-2"))
	} else {
		fmt.Fprintf(w, "Data:        in the Prometheus at %s (run_id=%q)\n", res.PrometheusURL, res.RunID)
		fmt.Fprintf(w, "Re-analyze:  joulemark analyze --prometheus.url %s --run-id %s --runs-dir %s --out %s\n",
			res.PrometheusURL, res.RunID, filepath.Dir(res.Dir), filepath.Join(res.Dir, "report-2"))
	}
	return nil
}
