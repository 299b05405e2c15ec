package analyze

import (
	"maps"
	"slices"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
)

// gpuKey names a GPU by its host: the exporter's instance and the GPU's
// UUID. UUIDs alone do not: cloned VMs and simulated exporters may report
// the same ones on two hosts.
type gpuKey struct{ instance, uuid string }

// keyOf is the GPU a series belongs to.
func keyOf(m model.Metric) gpuKey {
	return gpuKey{instance: string(m["instance"]), uuid: string(m[contract.LabelUUID])}
}

// gpuSet is the run's GPUs: sel narrows the queries (PromQL matchers), and
// a series belongs to the run only when its (instance, uuid) is in keys
// (nil: every series sel matches). A key without an instance (known from
// the bench archive only) matches its UUID on any instance sel matches.
type gpuSet struct {
	sel     string
	uuidSel string // sel without the instances (rawSel)
	keys    map[gpuKey]bool
}

// has says whether series m is one of the run's GPUs.
func (s gpuSet) has(m model.Metric) bool {
	if s.keys == nil {
		return true
	}
	k := keyOf(m)
	return s.keys[k] || s.keys[gpuKey{uuid: k.uuid}]
}

// rawSel narrows the queries of the exporters' pushed raw series
// (joulemark_gpu_{energy,power}_sample_*): remote write labels them with
// the exporter's host name, not the scrape target's instance, so they are
// matched by UUID (see rawOwners).
func (s gpuSet) rawSel() string {
	if s.uuidSel != "" {
		return s.uuidSel
	}
	return s.sel
}

// rawOwners maps each raw series' key to the run GPU it belongs to: the
// one GPU of the run with its UUID (those the scraped series named, else
// keys), and only while a single pushed instance carries that UUID. A UUID two hosts
// push (cloned VMs, simulated exporters) is left to the scraped series,
// which name their instance.
func (s gpuSet) rawOwners(m []rawSeries, found []gpuKey) map[gpuKey]gpuKey {
	pushed := map[string]map[string]bool{}
	for _, ss := range m {
		k := keyOf(ss.metric)
		if pushed[k.uuid] == nil {
			pushed[k.uuid] = map[string]bool{}
		}
		pushed[k.uuid][k.instance] = true
	}
	cands := found // the GPUs the scraped series named, with their instance
	if len(cands) == 0 {
		cands = slices.Collect(maps.Keys(s.keys))
	}
	owner := map[gpuKey]gpuKey{}
	for uuid, insts := range pushed {
		var run []gpuKey
		for _, k := range cands {
			if k.uuid == uuid {
				run = append(run, k)
			}
		}
		if len(run) != 1 || len(insts) != 1 {
			continue
		}
		for inst := range insts {
			owner[gpuKey{instance: inst, uuid: uuid}] = run[0]
		}
	}
	return owner
}
