package main

import (
	"io"

	"github.com/joulemark/joulemark/internal/reportcsv"
)

// writeReportCSV writes report.json (js) as one CSV row (analyze).
func writeReportCSV(w io.Writer, js []byte) error { return reportcsv.WriteDocument(w, js) }
