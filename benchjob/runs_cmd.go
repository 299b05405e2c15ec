package benchjob

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// RunListing is one line of `runs list`.
type RunListing struct {
	RunID    string   `json:"run_id"`
	Status   string   `json:"status"`
	Start    string   `json:"start,omitempty"`
	Requests *int     `json:"requests"`
	Flags    []string `json:"flags"`
	Error    string   `json:"error,omitempty"`
	// Valid is the verdict of the run's report (<run>/report/report.json),
	// null when the run has none; Excluding are its excluding flags'
	// codes; ReportError says why a report there could not be read.
	Valid       *bool    `json:"valid"`
	Excluding   []string `json:"excluding,omitempty"`
	ReportError string   `json:"report_error,omitempty"`
}

// ListRuns lists the runs of runsDir, oldest first (runarchive.List).
func ListRuns(runsDir string) ([]RunListing, error) {
	entries, err := runarchive.List(runsDir)
	if err != nil {
		return nil, err
	}
	rows := []RunListing{}
	for _, e := range entries {
		row := RunListing{RunID: e.ID, Status: e.Status(), Flags: []string{}}
		if e.Err != nil {
			row.Error = e.Err.Error()
		}
		if m := e.Manifest; m != nil {
			if m.Created > 0 {
				row.Start = time.Unix(0, int64(m.Created*1e9)).UTC().Format(time.RFC3339)
			}
			if m.Summary != nil {
				n := m.Summary.Started
				row.Requests = &n
			}
			if m.Flags != nil {
				row.Flags = m.Flags
			}
		}
		row.readVerdict(e.Run)
		rows = append(rows, row)
	}
	return rows, nil
}

// readVerdict fills Valid and Excluding from the run's report, when it
// has one; a report that cannot be read is named in ReportError.
func (row *RunListing) readVerdict(run *runarchive.Run) {
	path := filepath.Join(run.Path(runarchive.ReportDir), report.FileJSON)
	r, err := report.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		row.ReportError = err.Error()
		return
	}
	row.Valid = &r.Valid
	for _, f := range r.Flags {
		if f.Excluding {
			row.Excluding = append(row.Excluding, f.Code)
		}
	}
}

// validText is the VALID cell: yes, no (its excluding flags), not
// analysed, or unreadable.
func (row RunListing) validText() string {
	switch {
	case row.ReportError != "":
		return "unreadable report"
	case row.Valid == nil:
		return "not analysed"
	case *row.Valid:
		return "yes"
	case len(row.Excluding) > 0:
		return "no (" + strings.Join(row.Excluding, ",") + ")"
	}
	return "no"
}

// WriteRunList writes rows as format: text (a table), json or csv.
func WriteRunList(w io.Writer, format string, rows []RunListing) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"run_id", "status", "start", "requests", "valid", "flags"})
		for _, r := range rows {
			cw.Write([]string{r.RunID, r.Status, r.Start, requestsText(r.Requests, ""), r.validText(), strings.Join(r.Flags, ";")})
		}
		cw.Flush()
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tSTATUS\tSTART\tREQUESTS\tVALID\tFLAGS")
	for _, r := range rows {
		fl := strings.Join(r.Flags, ",")
		if r.Error != "" && fl == "" {
			fl = "(" + r.Error + ")"
		}
		if r.ReportError != "" {
			fl = strings.TrimPrefix(fl+" ("+r.ReportError+")", " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Status, orNA(r.Start), requestsText(r.Requests, "n/a"), r.validText(), fl)
	}
	return tw.Flush()
}

func requestsText(n *int, none string) string {
	if n == nil {
		return none
	}
	return fmt.Sprint(*n)
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// WriteText prints what Finalize did to run id of runsDir, exporters in
// URL order. It returns an error naming each exporter on which the run
// could not be ended.
func (r *FinalizeResult) WriteText(w io.Writer, runsDir, id string) error {
	if r.EngineKilled {
		fmt.Fprintln(w, "engine: killed the process group the run left")
	}
	for _, u := range slices.Sorted(maps.Keys(r.Exporters)) {
		st := r.Exporters[u]
		fmt.Fprintf(w, "exporter %s: run %s %s (%s)\n", u, id, st.State, st.EndReason)
	}
	fmt.Fprintf(w, "run %s: status %s, archive final in %s/%s\n", id, r.Manifest.Status, runsDir, id)
	var errs []string
	for _, u := range slices.Sorted(maps.Keys(r.ExporterErrors)) {
		errs = append(errs, fmt.Sprintf("exporter %s: %v", u, r.ExporterErrors[u]))
	}
	if len(errs) > 0 {
		return fmt.Errorf("the archive is final but the run could not be ended on: %s", strings.Join(errs, "; "))
	}
	return nil
}
