package exporter

import (
	"strconv"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

// podCollector serves the kubelet allocations and the energy attributed to
// pods.
type podCollector struct {
	a                                   *attributor
	up, errs, alloc, energy, method, un *prometheus.Desc
}

func newPodCollector(a *attributor) *podCollector {
	pod := []string{"namespace", "pod", "container"}
	return &podCollector{a: a,
		up:   prometheus.NewDesc(contract.KubeletUp, "1 when the last read of the kubelet's PodResources API succeeded.", nil, nil),
		errs: prometheus.NewDesc(contract.KubeletErrors, "Failed reads of the kubelet's PodResources API (socket missing, kubelet down, timeout, bad answer).", nil, nil),
		alloc: prometheus.NewDesc(contract.GPUAllocationInfo,
			"1 for each GPU a container holds, as the kubelet lists it; shared is true for MIG instances, time-sliced replicas and GPUs held by several containers.",
			[]string{"gpu", "uuid", "namespace", "pod", "container", "resource", "shared"}, nil),
		energy: prometheus.NewDesc(contract.PodEnergy,
			"GPU energy attributed to the container since the exporter saw it, integrated at the sampling rate over the GPUs it holds (see joulemark_pod_energy_attribution_info).", pod, nil),
		method: prometheus.NewDesc(contract.PodAttributionInfo,
			"How a GPU's energy is split among its holders now: exclusive (one holder), sm_share (by each process's SM utilization), even (per device id held), mig_size (MIG instances, by their SM count over all of the GPU's; instances nobody holds are unallocated).",
			[]string{"gpu", "uuid", "namespace", "pod", "container", "method"}, nil),
		un: prometheus.NewDesc(contract.UnallocatedEnergy,
			"Energy of the GPU while no container held it, since the first successful kubelet read.", gpuLabels, nil),
	}
}

func (c *podCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.errs, c.alloc, c.energy, c.method, c.un} {
		ch <- d
	}
}

func (c *podCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	uuid := make([]string, a.ngpu)
	for u, i := range a.uuids {
		uuid[i] = u
	}
	up := 0.0
	if a.up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.errs, prometheus.CounterValue, float64(a.errs))
	if !a.known {
		return
	}
	for _, r := range a.rows {
		ch <- prometheus.MustNewConstMetric(c.alloc, prometheus.GaugeValue, 1,
			strconv.Itoa(r.gpu), uuid[r.gpu], r.ref.Namespace, r.ref.Pod, r.ref.Container, r.resource, strconv.FormatBool(r.shared))
	}
	for i, g := range a.gpus {
		idx := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(c.un, prometheus.CounterValue, g.unalloc, idx, uuid[i])
		for _, h := range g.shares {
			ch <- prometheus.MustNewConstMetric(c.method, prometheus.GaugeValue, 1, idx, uuid[i], h.ref.Namespace, h.ref.Pod, h.ref.Container, g.method)
		}
	}
	for ref, p := range a.pods {
		ch <- prometheus.MustNewConstMetric(c.energy, prometheus.CounterValue, p.joules, ref.Namespace, ref.Pod, ref.Container)
		if !p.present {
			p.gone++
			if p.gone >= a.cfg.KeepScrapes {
				delete(a.pods, ref)
			}
		}
	}
}
