// Package production derives production energy figures for a time range
// from Prometheus: per model and per pod energy, output tokens, J/token,
// idle-allocated energy, the startup energy of every (re)start and the
// energy of unallocated GPUs, from the exporter's per-pod energy counters
// (kubelet PodResources) and the engines' token counters. It is what
// `joulemark analyze production` writes as report.json, .md and .html.
package production

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/joulemark/joulemark/report"
)

// Sample is one stored sample: unix seconds and value.
type Sample struct {
	T, V float64
}

// Series is one time series of a counter, samples in time order.
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Data is what the report is computed from.
type Data struct {
	From, To float64
	// PodEnergy: joulemark_pod_energy_joules_total (namespace, pod,
	// container).
	PodEnergy []Series
	// Tokens: the engines' output token counters (internal/contract's
	// RoleGenerationTokens names; namespace, pod,
	// model_name).
	Tokens []Series
	// Allocations: joulemark_gpu_allocation_info (namespace, pod): when
	// each pod held GPUs.
	Allocations []Series
	// Unallocated: joulemark_unallocated_energy_joules_total.
	Unallocated []Series
	// ModuleGPUs: joulemark_gpu_info{energy_scope="module"}, GPUs whose
	// energy covers a C2C module (Grace CPU and memory included).
	ModuleGPUs []Series
	// PhaseStarts, PhaseEnds and PhaseEnergy: the exporters'
	// joulemark_phase_{start,end}_timestamp_seconds and
	// joulemark_phase_energy_joules of the startup and warmup phases (run_id,
	// phase; the energy per gpu, uuid): bench-started engines.
	PhaseStarts, PhaseEnds, PhaseEnergy []Series
	// RunInfo: joulemark_run_info (run_id, model), the model of a bench run.
	RunInfo []Series
	// ReadAPI is how the series were read (remote-read or query);
	// ReadFallback why remote read was given up.
	ReadAPI, ReadFallback string
}

// counter is a counter series with resets bridged: cum[i] is the increase
// since the first sample plus the first sample's value (a counter that
// starts inside the range starts from zero).
type counter struct {
	t, cum []float64
}

func newCounter(samples []Sample) counter {
	c := counter{t: make([]float64, len(samples)), cum: make([]float64, len(samples))}
	var acc, prev float64
	for i, s := range samples {
		acc, prev = bridge(i == 0, acc, prev, s.V), s.V
		c.t[i], c.cum[i] = s.T, acc
	}
	return c
}

// bridge is a counter's cumulative value after v, given the value before
// it (prev) and the cumulative value then (acc); first: v is the first.
func bridge(first bool, acc, prev, v float64) float64 {
	switch {
	case first:
		return v
	case v >= prev:
		return acc + (v - prev)
	default: // reset: the counter restarted from zero
		return acc + v
	}
}

// at is the counter's cumulative value at t: linear between samples, zero
// before the first (the counter did not exist), the last value after the
// last.
func (c counter) at(t float64) float64 {
	n := len(c.t)
	if n == 0 || t < c.t[0] {
		return 0
	}
	i := sort.SearchFloat64s(c.t, t) // first index with c.t[i] >= t
	if i == n {
		return c.cum[n-1]
	}
	if c.t[i] == t || i == 0 {
		return c.cum[i]
	}
	f := (t - c.t[i-1]) / (c.t[i] - c.t[i-1])
	return c.cum[i-1] + f*(c.cum[i]-c.cum[i-1])
}

func (c counter) delta(a, b float64) float64 { return c.at(b) - c.at(a) }

// sum adds counters.
type counters []counter

func (cs counters) delta(a, b float64) float64 {
	var s float64
	for _, c := range cs {
		s += c.delta(a, b)
	}
	return s
}

type podKey struct{ Namespace, Pod string }

// pod gathers one pod's series.
type pod struct {
	key    podKey
	model  string
	energy counters
	tokens counters
	alloc  []float64            // allocation sample times, sorted
	held   map[string][]float64 // allocation sample times by GPU (gpuOf)
	hasTok bool
}

// Compute derives the report from data. Pods are filtered by namespace and
// model when those are set.
func Compute(d *Data, namespace, model string) *Report {
	f := newFold(d, namespace, model)
	f.addPods(gather(d))
	for _, s := range d.Unallocated {
		f.unallocated = append(f.unallocated, newCounter(s.Samples).delta(d.From, d.To))
	}
	return f.finish()
}

// fold accumulates the report from pods given in batches, in namespace
// then pod order (each pod whole in one batch), so that no batch's raw
// samples outlive it; the result is Compute's over all the pods at once,
// sums added in the same order.
type fold struct {
	r                *Report
	namespace, model string
	// bench is the bench starts, run ID order; a start's pod is the first
	// pod (in order) holding one of its GPUs.
	bench []benchStart
	// alloc is the kept pods' allocation starts a bench start did not see.
	alloc   []Start
	byModel map[string]*ModelFigures
	// energy and tokens per model at each J/token-over-time point.
	energy, tokens map[string][]float64
	// unallocated is each unallocated-energy series' energy, in order.
	unallocated []float64
}

// benchStart is a bench start, the GPUs of its run and where its hold ends.
type benchStart struct {
	Start
	gpus    []string
	end     float64
	claimed bool
}

// newFold starts a fold over d's range with d's bench runs and GPUs.
func newFold(d *Data, namespace, model string) *fold {
	r := &Report{From: d.From, To: d.To, Namespace: namespace, Model: model, Boundary: report.Boundary,
		Models: []ModelFigures{}, Pods: []PodFigures{}, Starts: []Start{}, JoulesPerTokenOverTime: []ModelPoints{}}
	if len(d.ModuleGPUs) > 0 {
		r.Boundary = report.BoundaryModule
	}
	return &fold{r: r, namespace: namespace, model: model, bench: benchStarts(d),
		byModel: map[string]*ModelFigures{}, energy: map[string][]float64{}, tokens: map[string][]float64{}}
}

func (f *fold) figures(name string) *ModelFigures {
	m := f.byModel[name]
	if m == nil {
		m = &ModelFigures{Model: name}
		f.byModel[name] = m
	}
	return m
}

// addPods folds a batch of pods in, after every pod before them.
func (f *fold) addPods(pods map[podKey]*pod) {
	from, to := f.r.From, f.r.To
	for _, k := range sortedPods(pods) {
		p := pods[k]
		var mine []Start // the bench starts p took
		for i := range f.bench {
			b := &f.bench[i]
			if !b.claimed && p.heldDuring(b.gpus, b.AllocatedAt, b.end) {
				b.claimed, b.Namespace, b.Pod, b.Model = true, k.Namespace, k.Pod, cmp.Or(p.model, b.Model)
			}
			if b.claimed && b.Namespace == k.Namespace && b.Pod == k.Pod {
				mine = append(mine, b.Start)
			}
		}
		if f.namespace != "" && k.Namespace != f.namespace || f.model != "" && p.model != f.model || len(p.energy) == 0 {
			continue
		}
		alloc := mergeStarts(p.starts(from, to), mine, p)
		f.alloc = append(f.alloc, alloc...)
		for _, b := range mine {
			if f.model == "" || b.Model == f.model {
				alloc = append(alloc, b)
			}
		}
		pf := p.figures(from, to, alloc)
		f.r.Pods = append(f.r.Pods, pf)
		f.r.EnergyJoules += pf.EnergyJoules
		if p.model == "" {
			continue
		}
		m := f.figures(p.model)
		m.Pods++
		m.EnergyJoules += pf.EnergyJoules
		m.OutputTokens += pf.OutputTokens
		m.IdleAllocatedJoules += pf.IdleAllocatedJoules
		f.overTime(p)
	}
}

// finish completes the report.
func (f *fold) finish() *Report {
	r := f.r
	starts := f.alloc
	for _, b := range f.bench {
		if (f.namespace == "" || b.Namespace == f.namespace) && (f.model == "" || b.Model == f.model) {
			starts = append(starts, b.Start)
		}
	}
	slices.SortStableFunc(starts, func(x, y Start) int { return cmp.Compare(x.AllocatedAt, y.AllocatedAt) })
	r.Starts = append(r.Starts, starts...)
	for _, s := range r.Starts {
		if s.Model != "" {
			m := f.figures(s.Model)
			m.Starts++
			m.StartupJoules += s.EnergyJoules
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.byModel)) {
		m := f.byModel[name]
		m.JoulesPerToken = ratio(m.EnergyJoules, m.OutputTokens)
		m.IdleAllocatedRatio = ratio(m.IdleAllocatedJoules, m.EnergyJoules)
		r.Models = append(r.Models, *m)
		r.JoulesPerTokenOverTime = append(r.JoulesPerTokenOverTime, f.points(name))
	}
	for _, e := range f.unallocated {
		r.UnallocatedJoules += e
	}
	return r
}

// sortedPods is the pods' keys by namespace, then pod.
func sortedPods(pods map[podKey]*pod) []podKey {
	return slices.SortedFunc(maps.Keys(pods), func(a, b podKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
	})
}

func ratio(a, b float64) *float64 {
	if b <= 0 || math.IsNaN(a) {
		return nil
	}
	v := a / b
	return &v
}

// gather groups the series by pod.
func gather(d *Data) map[podKey]*pod {
	pods := podSet{}
	for _, s := range d.PodEnergy {
		pods.get(s.Labels["namespace"], s.Labels["pod"]).energy.add(newCounter(s.Samples))
	}
	for _, s := range d.Tokens {
		pods.get(s.Labels["namespace"], s.Labels["pod"]).addTokens(s.Labels["model_name"], newCounter(s.Samples))
	}
	for _, s := range d.Allocations {
		times := make([]float64, len(s.Samples))
		for i, x := range s.Samples {
			times[i] = x.T
		}
		pods.get(s.Labels["namespace"], s.Labels["pod"]).addAllocation(gpuOf(s.Labels), times)
	}
	return pods
}

// podSet is pods by key, as their series are read: energy, tokens and
// allocations, each in the order of their reads.
type podSet map[podKey]*pod

// get is the pod, added when new.
func (ps podSet) get(namespace, name string) *pod {
	k := podKey{namespace, name}
	p := ps[k]
	if p == nil {
		p = &pod{key: k}
		ps[k] = p
	}
	return p
}

func (cs *counters) add(c counter) { *cs = append(*cs, c) }

// addTokens adds an output-token counter of model (the pod's model is the
// least of its counters' non-empty models).
func (p *pod) addTokens(model string, c counter) {
	p.tokens = append(p.tokens, c)
	p.hasTok = true
	if model != "" && (p.model == "" || model < p.model) {
		p.model = model
	}
}

// addAllocation adds the sample times (sorted) of the pod's allocation of
// GPU g (gpuOf); p keeps times.
func (p *pod) addAllocation(g string, times []float64) {
	if p.held == nil {
		p.held = map[string][]float64{}
	}
	held := times
	if old := p.held[g]; old != nil {
		held = append(old, times...)
	}
	p.alloc = mergeTimes(p.alloc, times)
	p.held[g] = held
}

// mergeTimes is the sorted union of a and b, each sorted without
// repeats: a pod's GPUs' allocation series mostly share their times.
func mergeTimes(a, b []float64) []float64 {
	switch {
	case len(a) == 0:
		return slices.Clone(b)
	case slices.Equal(a, b):
		return a
	}
	out := make([]float64, 0, max(len(a), len(b)))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// startGap is the shortest absence of a pod's allocation that makes its
// return a restart: several scrape intervals.
func startGap(ts []float64) float64 {
	if len(ts) < 2 {
		return 60
	}
	steps := make([]float64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		steps = append(steps, ts[i]-ts[i-1])
	}
	slices.Sort(steps)
	return max(5*steps[len(steps)/2], 30)
}

// starts finds the pod's (re)starts inside (from, to]: its allocation
// appearing, after none or after a gap, until its engine is ready (the
// first scrape of its metrics after that); the time after readiness is
// serving, idle or not, never startup. The first token is reported beside.
func (p *pod) starts(from, to float64) []Start {
	var out []Start
	gap := startGap(p.alloc)
	for i, t := range p.alloc {
		if i > 0 && t-p.alloc[i-1] < gap || t <= from || t > to {
			continue
		}
		s := Start{Source: StartAllocation, Namespace: p.key.Namespace, Pod: p.key.Pod, Model: p.model, AllocatedAt: t}
		end := to
		if rt, ok := p.firstScrape(t, to); ok {
			s.ReadyAt, s.ReadySignal, s.EndAt, s.Complete, end = &rt, ReadyFirstScrape, &rt, true, rt
		}
		if ft, ok := p.firstToken(t, to); ok {
			s.FirstTokenAt = &ft
		}
		s.EnergyJoules = p.energy.delta(t, end)
		out = append(out, s)
	}
	return out
}

// firstScrape is the time of the first sample of the pod's engine metrics
// after a, up to b.
func (p *pod) firstScrape(a, b float64) (float64, bool) {
	best, found := math.Inf(1), false
	for _, c := range p.tokens {
		i, ok := slices.BinarySearch(c.t, a)
		if ok {
			i++ // strictly after a
		}
		if i < len(c.t) && c.t[i] <= b && c.t[i] < best {
			best, found = c.t[i], true
		}
	}
	return best, found
}

// firstToken is the time of the first sample after a showing a token more
// than at a (a counter that starts after a starts from zero).
func (p *pod) firstToken(a, b float64) (float64, bool) {
	best, found := math.Inf(1), false
	for _, c := range p.tokens {
		base := c.at(a)
		for i, t := range c.t {
			if t <= a || t > b {
				continue
			}
			if c.cum[i] > base {
				if t < best {
					best, found = t, true
				}
				break
			}
		}
	}
	return best, found
}

// figures computes the pod's energy, tokens and idle-allocated energy over
// (from, to]: energy between consecutive token samples that show no new
// token, outside its startups.
func (p *pod) figures(from, to float64, starts []Start) PodFigures {
	f := PodFigures{Namespace: p.key.Namespace, Pod: p.key.Pod, Model: p.model,
		EnergyJoules: p.energy.delta(from, to), OutputTokens: p.tokens.delta(from, to)}
	if p.hasTok {
		inStartup := func(a, b float64) bool {
			for _, s := range starts {
				end := to
				if s.EndAt != nil {
					end = *s.EndAt
				}
				if a >= s.AllocatedAt && b <= end {
					return true
				}
			}
			return false
		}
		for _, c := range p.tokens {
			for i := 1; i < len(c.t); i++ {
				a, b := max(c.t[i-1], from), min(c.t[i], to)
				if b <= a || c.cum[i] > c.cum[i-1] || inStartup(a, b) {
					continue
				}
				f.IdleAllocatedJoules += p.energy.delta(a, b)
			}
		}
		// one token counter per pod in practice; several split their idle
		// intervals, which the sum over counters would count twice
		f.IdleAllocatedJoules /= float64(len(p.tokens))
	}
	f.JoulesPerToken = ratio(f.EnergyJoules, f.OutputTokens)
	f.IdleAllocatedRatio = ratio(f.IdleAllocatedJoules, f.EnergyJoules)
	return f
}

// overTimePoints is how many points the J/token-over-time curve has.
const overTimePoints = 120

// overTimeWindow is the J/token-over-time points' times and window
// starts over (from, to]: windows of 5 minutes, or the spacing of the
// points when longer.
func overTimeWindow(from, to float64, i int) (a, t float64) {
	step := (to - from) / overTimePoints
	t = from + float64(i)*step
	return max(from, t-max(300, step)), t
}

// overTime adds a pod of its model to the model's J/token over sliding
// windows across the range.
func (f *fold) overTime(p *pod) {
	if f.r.To-f.r.From <= 0 {
		return
	}
	e, n := f.energy[p.model], f.tokens[p.model]
	if e == nil {
		e, n = make([]float64, overTimePoints+1), make([]float64, overTimePoints+1)
		f.energy[p.model], f.tokens[p.model] = e, n
	}
	for i := 1; i <= overTimePoints; i++ {
		a, t := overTimeWindow(f.r.From, f.r.To, i)
		e[i] += p.energy.delta(a, t)
		n[i] += p.tokens.delta(a, t)
	}
}

// points is the model's J/token over time: its pods' energy over their
// tokens in each window with tokens.
func (f *fold) points(model string) ModelPoints {
	mp := ModelPoints{Model: model, Points: []Point{}}
	e, n := f.energy[model], f.tokens[model]
	for i := 1; i < len(n); i++ {
		if n[i] > 0 {
			_, t := overTimeWindow(f.r.From, f.r.To, i)
			mp.Points = append(mp.Points, Point{T: t, JoulesPerToken: e[i] / n[i]})
		}
	}
	return mp
}
