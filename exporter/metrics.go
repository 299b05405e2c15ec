package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/version"
)

var gpuLabels = []string{"gpu", "uuid"}

// registerMetrics builds the registry of the metric contract (custom
// collectors reading cached state) and the one of self-metrics.
func (e *Exporter) registerMetrics() {
	e.reg = prometheus.NewRegistry()
	e.phaseColl, e.runColl = newPhaseCollector(e), newRunCollector(e)
	e.reg.MustRegister(
		newInfoCollector(e), newPowerCollector(e), newEnergyCollector(e), newContextCollector(e),
		newSamplerCollector(e), e.phaseColl, e.runColl,
	)
	if e.cfg.Host != nil {
		e.reg.MustRegister(newHostCollector(e.cfg.Host))
	}
	if e.rw != nil {
		e.reg.MustRegister(newRemoteWriteCollector(e))
	}
	if e.attr != nil {
		e.reg.MustRegister(newPodCollector(e.attr))
	}
	e.sampleDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: contract.GPUSampleDuration,
		Help: "Time one fast GPU read took (the backend call: NVML, or the simulator), per GPU.",
		// NVML power reads take ~0.1–1 ms when healthy; the tail catches
		// PMU/GSP contention and driver stalls.
		Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, gpuLabels)
	e.reg.MustRegister(e.sampleDuration)
	e.selfReg = prometheus.NewRegistry()
	e.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: contract.ExporterAPIRequests,
		Help: "HTTP requests to the exporter's API, by handler, method and status code.",
	}, []string{"handler", "method", "code"})
	e.scrapeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    contract.ExporterScrapeTime,
		Help:    "Time to answer a /metrics scrape.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25},
	}, nil)
	e.authFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: contract.ExporterAuthFailed,
		Help: "API requests refused for a missing or wrong token.",
	})
	e.storeErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: contract.ExporterStoreErrors,
		Help: "Failed writes of the durable state under --storage.path.",
	})
	e.clockSteps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: contract.ExporterClockSteps,
		Help: "Steps of the node's wall clock beyond 50 ms (NTP sync, VM migration); timestamps were re-anchored on the new wall time.",
	})
	e.selfReg.MustRegister(
		e.apiRequests, e.scrapeDuration, e.authFailures, e.storeErrors, e.clockSteps,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(),
	)
}

func buildInfo() prometheus.Collector {
	v, rev, _ := version.Info()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        contract.ExporterBuildInfo,
		Help:        "The joulemark build serving these metrics.",
		ConstLabels: prometheus.Labels{"version": v, "revision": rev},
	})
	g.Set(1)
	return g
}
