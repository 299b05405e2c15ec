package exporter

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newMetricsHandler serves /metrics through promhttp: the contract metrics
// (live runs from the collectors, finished runs from the frozen cache until
// their RunMetricsTTL passes) and the exporter's self-metrics, in every
// format and compression promhttp negotiates.
func newMetricsHandler(e *Exporter) http.Handler {
	return promhttp.HandlerFor(gatherer{e: e, withSelf: true}, promhttp.HandlerOpts{
		ErrorLog: slogErrorLog{e}, Registry: e.selfReg, MaxRequestsInFlight: 10,
	})
}
