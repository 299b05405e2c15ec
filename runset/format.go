package runset

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// FormatValue prints a figure with 4 significant digits (whole numbers from
// 1000 up to 1e12, without an exponent), or "-" when missing.
func FormatValue(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	if a := math.Abs(v); a >= 1000 && a < 1e12 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// FormatMetric prints metric m of run r for a table cell (latencies in
// ms, see Metric.Header).
// A pooled run's cell is the median and, over two or more repetitions,
// their range: "1.23 (1.2–1.25)".
func FormatMetric(m Metric, r *Run) string {
	if r.Pool != nil {
		v, ok := r.Pool.Pool(m)
		if ok && v.N > 1 {
			return m.Cell(v.Median, true) + " (" + m.Cell(v.Min, true) + "–" + m.Cell(v.Max, true) + ")"
		}
	}
	return m.Cell(m.Of(r))
}

// Header is the metric's column header in human tables: latencies carry
// "_ms" (their cells are in milliseconds; JSON keeps seconds).
func (m Metric) Header() string {
	if m.Unit == "s" {
		return m.Label + "_ms"
	}
	return m.Label
}

// Cell formats a value of the metric for its column (ms for latencies).
func (m Metric) Cell(v float64, ok bool) string {
	if ok && m.Unit == "s" {
		v *= 1000
	}
	return FormatValue(v, ok)
}

// Text formats a value of the metric with its unit, for messages: "250 ms",
// "60 GiB", "0.3".
func (m Metric) Text(v float64) string {
	switch m.Unit {
	case "s":
		return FormatValue(v*1000, true) + " ms"
	case "bytes":
		return FormatValue(v/(1<<30), true) + " GiB"
	}
	return FormatValue(v, true)
}

// Arrow marks the better direction in table headers: ↓ lower is better, ↑
// higher is better.
func (d Direction) Arrow() string {
	if d == Maximize {
		return "↑"
	}
	return "↓"
}

// Table writes aligned columns; the first row is the header.
func Table(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		if _, err := fmt.Fprintln(tw, strings.Join(row, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// RunLoad is the load a run was measured at ("concurrency 16", "rate 5
// req/s (poisson)"), from its report's run identity, else from its
// manifest; "-" when neither says.
func RunLoad(r *Run) string {
	if id := r.Report.Run; id != nil {
		if l := id.Load(); l != "" {
			return l
		}
	}
	if r.Load != nil {
		return r.Load.String()
	}
	return "-"
}
