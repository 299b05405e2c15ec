package choose

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

// FormatMetric prints metric m of run r.
func FormatMetric(m Metric, r *Run) string {
	return FormatValue(m.Value(&r.Report))
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
