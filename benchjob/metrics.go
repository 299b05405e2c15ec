package benchjob

import (
	"fmt"
	"math"
	"strconv"
	"sync"

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

	// The series observe touches, by outcome and by phase, looked up
	// once instead of per request.
	mu       sync.Mutex
	outcomes map[string]prometheus.Counter
	phases   map[string]*phaseSeries
}

func newAggregates(runID string) *aggregates {
	cl := prometheus.Labels{contract.LabelRunID: runID}
	counter := func(name string) *prometheus.CounterVec {
		help, labels := aggregateDesc(name)
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, labels)
	}
	histogram := func(name string, buckets []float64) *prometheus.HistogramVec {
		help, labels := aggregateDesc(name)
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: cl, Buckets: buckets}, labels)
	}
	gauge := func(name string) prometheus.Gauge {
		help, _ := aggregateDesc(name)
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: cl})
	}
	a := &aggregates{
		reg:      prometheus.NewRegistry(),
		requests: counter(contract.BenchRequests),
		tokens:   counter(contract.BenchOutputTokens),
		ttft:     histogram(contract.BenchTTFT, []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}),
		tpot:     histogram(contract.BenchTPOT, []float64{.001, .0025, .005, .01, .02, .03, .05, .075, .1, .2, .5, 1}),
		latency:  histogram(contract.BenchLatency, []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}),
		inFlight: gauge(contract.BenchInFlight),
		target:   gauge(contract.BenchTargetRate),
		achieved: gauge(contract.BenchAchievedRate),
	}
	a.reg.MustRegister(a.requests, a.tokens, a.ttft, a.tpot, a.latency, a.inFlight, a.target, a.achieved)
	return a
}

// aggregateDesc is the contract's help of the aggregate name and its
// labels other than run_id (a constant label of the run's registry).
func aggregateDesc(name string) (help string, labels []string) {
	d, _ := contract.BenchAggregate(name)
	for _, l := range d.Labels {
		if l != contract.LabelRunID {
			labels = append(labels, l)
		}
	}
	return d.Help, labels
}

// observe counts one finished request. It never panics: a count below
// zero (which the client's usage checks already refuse) adds nothing.
func (a *aggregates) observe(r *runarchive.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.outcomes == nil {
		a.outcomes, a.phases = map[string]prometheus.Counter{}, map[string]*phaseSeries{}
	}
	out := r.Outcome()
	if a.outcomes[out] == nil {
		a.outcomes[out] = a.requests.WithLabelValues(out)
	}
	a.outcomes[out].Inc()
	ps := a.phases[r.Phase]
	if ps == nil {
		ps = &phaseSeries{}
		a.phases[r.Phase] = ps
	}
	// Each series is made where it was first observed, as before the
	// cache: a phase without a success has no token series.
	cached(&ps.latency, a.latency, r.Phase).Observe(r.LatencySeconds)
	if r.Success {
		if ps.tokens == nil {
			ps.tokens = a.tokens.WithLabelValues(r.Phase)
		}
		ps.tokens.Add(float64(max(0, r.OutputTokens)))
		if r.TTFTSeconds != nil {
			cached(&ps.ttft, a.ttft, r.Phase).Observe(*r.TTFTSeconds)
		}
		if r.TPOTSeconds != nil {
			cached(&ps.tpot, a.tpot, r.Phase).Observe(*r.TPOTSeconds)
		}
	}
}

// phaseSeries are one phase's series, each nil until first observed.
type phaseSeries struct {
	latency, ttft, tpot prometheus.Observer
	tokens              prometheus.Counter
}

// cached is *o, set to vec's series of phase when nil.
func cached(o *prometheus.Observer, vec *prometheus.HistogramVec, phase string) prometheus.Observer {
	if *o == nil {
		*o = vec.WithLabelValues(phase)
	}
	return *o
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
