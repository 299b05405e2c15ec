package exporter

import (
	"compress/gzip"
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newMetricsHandler serves /metrics through promhttp: the contract metrics
// (live runs from the collectors, finished runs from the frozen cache until
// their RunMetricsTTL passes) and the exporter's self-metrics, in every
// format promhttp negotiates. Compression is klauspost/compress's gzhttp
// at BestSpeed: the scrape is mostly the live families, compressed anew
// each time, where promhttp's own gzip (default level) costs about twice
// the CPU.
func newMetricsHandler(e *Exporter) http.Handler {
	prom := promhttp.HandlerFor(gatherer{e: e, withSelf: true}, promhttp.HandlerOpts{
		ErrorLog: slogErrorLog{e}, Registry: e.selfReg, MaxRequestsInFlight: max(e.cfg.MaxRequests, 0), DisableCompression: true,
	})
	gz, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil { // constant options
		panic(err)
	}
	return gz(prom)
}
