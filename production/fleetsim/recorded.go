package fleetsim

import (
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// EvaluationInterval is deploy/prometheus' rule evaluation interval, at
// which the recorded series are written.
const EvaluationInterval = 15 * time.Second

// recorded writes, at the evaluation interval, the series the recording
// rules of groups joulemark-fleet and joulemark-production (rules/) would
// record for the fleet, from the fleet's instantaneous power and token
// rates (not the rules' 1 m and 5 m windows): what the fleet dashboard's
// panels read. The cost groups need operator inputs and are left out.
func (w *writer) recorded(w0, w1 int64) error {
	cfg := w.f.cfg
	pods := make([][]pod, len(w.f.slots))
	for i, s := range w.f.slots {
		pods[i] = w.f.pods(s, float64(w0)/1000, float64(w1)/1000)
	}
	cache := map[string]*series{}
	put := func(tms int64, v float64, kv ...string) error {
		ls := labels.FromStrings(kv...)
		s := cache[ls.String()]
		if s == nil {
			s = w.newSeries(ls)
			cache[ls.String()] = s
		}
		return w.add(s, tms, v)
	}
	t0, step := grid(w0, w1, EvaluationInterval)
	for tms := t0; tms < w1; tms += step {
		t := float64(tms) / 1000
		sums := map[[2]string]float64{} // {record name, label value} → sum
		var fleetW float64
		for i, s := range w.f.slots {
			node := nodeName(s.node)
			watts, held := idleWatts*float64(s.gpus), false
			for _, p := range pods[i] {
				if t < p.start || t >= p.end {
					continue
				}
				held, watts = true, gpuWatts(s.model, t)*float64(s.gpus)
				ns, name, model := namespace(s.model, cfg.Namespaces), p.name(), modelName(s.model)
				tok := tokensPerSecond(s.model) * load(s.model, t) * float64(s.gpus)
				for _, x := range []struct {
					v  float64
					kv []string
				}{
					{watts, []string{"__name__", "namespace_pod:joulemark_energy_joules:rate5m", "namespace", ns, "pod", name}},
					{tok, []string{"__name__", "namespace_pod_model_name:joulemark_generation_tokens:rate5m", "namespace", ns, "pod", name, "model_name", model}},
					{watts / tok, []string{"__name__", "namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m", "namespace", ns, "pod", name}},
				} {
					if err := put(tms, x.v, x.kv...); err != nil {
						return err
					}
				}
				sums[[2]string{"namespace:joulemark_energy_joules:rate5m", ns}] += watts
				sums[[2]string{"model_name:joulemark_energy_joules:rate5m", model}] += watts
				sums[[2]string{"model_name:joulemark_generation_tokens:rate5m", model}] += tok
				sums[[2]string{"node:joulemark_generation_tokens:rate5m", node}] += tok
			}
			if !held {
				sums[[2]string{"node:joulemark_unallocated_energy_joules:rate5m", node}] += watts
			}
			sums[[2]string{"node:joulemark_gpu_energy_joules:rate5m", node}] += watts
			fleetW += watts
		}
		if err := w.aggregates(tms, sums, fleetW, put); err != nil {
			return err
		}
	}
	return nil
}

// aggregates writes the per namespace, model and node records of one
// evaluation, and the fleet's.
func (w *writer) aggregates(tms int64, sums map[[2]string]float64, fleetW float64, put func(int64, float64, ...string) error) error {
	for k, v := range sums {
		label, _, _ := strings.Cut(k[0], ":") // the record's level: namespace, model_name or node
		if err := put(tms, v, "__name__", k[0], label, k[1]); err != nil {
			return err
		}
		if k[0] == "node:joulemark_gpu_energy_joules:rate5m" {
			if tok := sums[[2]string{"node:joulemark_generation_tokens:rate5m", k[1]}]; tok > 0 {
				if err := put(tms, v/tok, "__name__", "node:joulemark_joules_per_generation_token:ratio_rate5m", "node", k[1]); err != nil {
					return err
				}
			}
			if err := put(tms, v, "__name__", "instance:joulemark_gpu_power_watts:sum", "node", k[1], "instance", k[1]+":9402"); err != nil {
				return err
			}
			if err := put(tms, v, "__name__", "instance:joulemark_gpu_energy_joules:rate1m", "node", k[1], "instance", k[1]+":9402"); err != nil {
				return err
			}
		}
		if k[0] == "model_name:joulemark_energy_joules:rate5m" {
			if tok := sums[[2]string{"model_name:joulemark_generation_tokens:rate5m", k[1]}]; tok > 0 {
				if err := put(tms, v/tok, "__name__", "model_name:joulemark_joules_per_generation_token:ratio_rate5m", "model_name", k[1]); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range []string{"joulemark:gpu_power_watts:sum", "joulemark:gpu_energy_joules:rate5m"} {
		if err := put(tms, fleetW, "__name__", name); err != nil {
			return err
		}
	}
	return put(tms, fleetW*3600, "__name__", "joulemark:gpu_energy_joules:increase1h")
}
