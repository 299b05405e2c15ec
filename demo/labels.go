package demo

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// NodeLabel is the node label the demo puts on the exporter's and the
// engine's series, as deploy/prometheus's relabelling does for real nodes:
// the dashboards select on it and the recording rules join GPU energy to
// engine tokens on it.
const NodeLabel = "demo"

// labelGatherer adds constant labels to every metric of a gatherer (what a
// scrape config's target labels do), unless the metric already has them.
type labelGatherer struct {
	g      prometheus.Gatherer
	labels map[string]string
}

func (l labelGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := l.g.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			have := map[string]bool{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = true
			}
			for k, v := range l.labels {
				if !have[k] {
					m.Label = append(m.Label, &dto.LabelPair{Name: &k, Value: &v})
				}
			}
			sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
		}
	}
	return mfs, err
}
