package benchjob

import (
	"fmt"
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// aggregates are the run's dashboard metrics, kept in a private
// client_golang registry and turned into remote-write samples.
type aggregates struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	ttft     *prometheus.HistogramVec
	tpot     *prometheus.HistogramVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	target   prometheus.Gauge
	achieved prometheus.Gauge
}

func newAggregates(runID string) *aggregates {
	cl := prometheus.Labels{"run_id": runID}
	a := &aggregates{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.BenchRequests, ConstLabels: cl,
			Help: "Requests finished, by outcome (success or the error class)."}, []string{"outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.BenchOutputTokens, ConstLabels: cl,
			Help: "Output tokens of successful requests."}, []string{"phase"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: contract.BenchTTFT, ConstLabels: cl,
			Help:    "Time to first token of successful requests.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"phase"}),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: contract.BenchTPOT, ConstLabels: cl,
			Help:    "Time per output token after the first, of successful requests.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .03, .05, .075, .1, .2, .5, 1}}, []string{"phase"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: contract.BenchLatency, ConstLabels: cl,
			Help:    "End-to-end latency of every request, failures included.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}}, []string{"phase"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: contract.BenchInFlight, ConstLabels: cl,
			Help: "Requests in flight."}),
		target: prometheus.NewGauge(prometheus.GaugeOpts{Name: contract.BenchTargetRate, ConstLabels: cl,
			Help: "Target request rate of the open loop (0 for a closed loop)."}),
		achieved: prometheus.NewGauge(prometheus.GaugeOpts{Name: contract.BenchAchievedRate, ConstLabels: cl,
			Help: "Requests sent per second since the formal phase started."}),
	}
	a.reg.MustRegister(a.requests, a.tokens, a.ttft, a.tpot, a.latency, a.inFlight, a.target, a.achieved)
	return a
}

// observe counts one finished request. It never panics: a count below
// zero (which the client's usage checks already refuse) adds nothing.
func (a *aggregates) observe(r *runarchive.Request) {
	a.requests.WithLabelValues(r.Outcome()).Inc()
	a.latency.WithLabelValues(r.Phase).Observe(r.LatencySeconds)
	if r.Success {
		a.tokens.WithLabelValues(r.Phase).Add(float64(max(0, r.OutputTokens)))
		if r.TTFTSeconds != nil {
			a.ttft.WithLabelValues(r.Phase).Observe(*r.TTFTSeconds)
		}
		if r.TPOTSeconds != nil {
			a.tpot.WithLabelValues(r.Phase).Observe(*r.TPOTSeconds)
		}
	}
}

// samples gathers the registry into remote-write samples at tsMs.
func (a *aggregates) samples(tsMs int64) ([]remotewrite.Sample, error) {
	mfs, err := a.reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering aggregates: %w", err)
	}
	return familiesToSamples(mfs, tsMs), nil
}

// settle sets the gauges to their final values, from what the archive
// keeps (the manifest's load section), before the final samples: the
// bench's and runs push's final samples then carry the same values.
func (a *aggregates) settle(load runarchive.LoadInfo) {
	a.inFlight.Set(0)
	a.target.Set(load.TargetRate)
	a.achieved.Set(load.AchievedRate)
}

// familiesToSamples flattens gathered families the way Prometheus would
// scrape them (histograms as _bucket{le}, _sum, _count).
func familiesToSamples(mfs []*dto.MetricFamily, ts int64) []remotewrite.Sample {
	var out []remotewrite.Sample
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			base := map[string]string{}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			with := func(n string, extra ...string) map[string]string {
				l := make(map[string]string, len(base)+2)
				for k, v := range base {
					l[k] = v
				}
				l["__name__"] = n
				for i := 0; i+1 < len(extra); i += 2 {
					l[extra[i]] = extra[i+1]
				}
				return l
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, remotewrite.Sample{Labels: with(name), Value: m.GetCounter().GetValue(), TimestampMs: ts})
			case dto.MetricType_GAUGE:
				out = append(out, remotewrite.Sample{Labels: with(name), Value: m.GetGauge().GetValue(), TimestampMs: ts})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out = append(out, remotewrite.Sample{Labels: with(name+"_bucket", "le", formatLe(b.GetUpperBound())),
						Value: float64(b.GetCumulativeCount()), TimestampMs: ts})
				}
				out = append(out,
					remotewrite.Sample{Labels: with(name+"_bucket", "le", "+Inf"), Value: float64(h.GetSampleCount()), TimestampMs: ts},
					remotewrite.Sample{Labels: with(name + "_sum"), Value: h.GetSampleSum(), TimestampMs: ts},
					remotewrite.Sample{Labels: with(name + "_count"), Value: float64(h.GetSampleCount()), TimestampMs: ts})
			}
		}
	}
	return out
}

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
