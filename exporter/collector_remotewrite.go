package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type remoteWriteCollector struct {
	e                                      *Exporter
	sent, dropped, failed, retries, queued *prometheus.Desc
}

func newRemoteWriteCollector(e *Exporter) *remoteWriteCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &remoteWriteCollector{e: e,
		sent:    d(contract.RemoteWriteSent, "Raw power samples the remote-write server acknowledged."),
		dropped: d(contract.RemoteWriteDropped, "Raw power samples dropped because the remote-write buffer was full."),
		failed:  d(contract.RemoteWriteFailed, "Raw power samples rejected by the server or whose retries ran out."),
		retries: d(contract.RemoteWriteRetries, "Remote-write requests retried."),
		queued:  d(contract.RemoteWritePending, "Raw power samples waiting to be sent."),
	}
}

func (c *remoteWriteCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sent, c.dropped, c.failed, c.retries, c.queued} {
		ch <- d
	}
}

func (c *remoteWriteCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.e.rw.Stats()
	ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(st.Acknowledged))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(st.Failed))
	ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(st.Retries))
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(c.e.rw.Pending()))
}
