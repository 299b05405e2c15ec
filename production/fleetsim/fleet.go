// Package fleetsim builds a simulated GPU fleet straight into a Prometheus
// TSDB: nodes of GPUs scraped by the exporter, engine pods of many models
// over several namespaces that roll over during the day, at the exporter's
// and the engines' scrape intervals, with the exporter's and engines' metric
// names (internal/contract) and the label sets the exporter, the scrape
// config and the recording rules give them. Its counters follow closed forms,
// so the exact energy and tokens of each model over any range are known
// (Fleet.Totals), to check `joulemark analyze production` against.
// docs/deploy.md ("Sizing") measures the analysis, the rules and the fleet
// dashboard on it.
package fleetsim

import (
	"fmt"
	"math"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// Config sizes the fleet.
type Config struct {
	Nodes       int // GPU nodes
	GPUsPerNode int // default 8
	Models      int // default 40
	Namespaces  int // default 10
	// From and To: the range written (every series covers it, pods
	// rolling over inside it); aligned down to the engine interval.
	From, To time.Time
	// ExporterInterval and EngineInterval: the scrape intervals (default
	// 1 s and 5 s, deploy/prometheus).
	ExporterInterval, EngineInterval time.Duration
	// PodLifetime: each pod is replaced after this long (default 6 h),
	// staggered over the slots; the GPUs are unallocated for RolloverGap
	// (default 1 min) between a pod and its successor.
	PodLifetime, RolloverGap time.Duration
}

// Physical constants of the simulated GPUs.
const (
	idleWatts = 90.0
	peakWatts = 650.0
	day       = 86400.0
)

func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.GPUsPerNode, 8)
	def(&c.Models, 40)
	def(&c.Namespaces, 10)
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defD(&c.ExporterInterval, time.Second)
	defD(&c.EngineInterval, 5*time.Second)
	defD(&c.PodLifetime, 6*time.Hour)
	defD(&c.RolloverGap, time.Minute)
	c.From = c.From.Truncate(c.EngineInterval)
	c.To = c.To.Truncate(c.EngineInterval)
}

// Validate checks the configuration (after defaults).
func (c Config) Validate() error {
	switch {
	case c.Nodes <= 0:
		return fmt.Errorf("fleet: %d nodes", c.Nodes)
	case !c.To.After(c.From):
		return fmt.Errorf("fleet: range %s to %s is empty", c.From, c.To)
	case c.RolloverGap >= c.PodLifetime:
		return fmt.Errorf("fleet: rollover gap %s not below the pod lifetime %s", c.RolloverGap, c.PodLifetime)
	case c.EngineInterval%c.ExporterInterval != 0:
		return fmt.Errorf("fleet: engine interval %s not a multiple of the exporter's %s", c.EngineInterval, c.ExporterInterval)
	}
	return nil
}

// slot is a group of a node's GPUs that one pod at a time holds.
type slot struct {
	node, first, gpus int
	model             int
	offset            float64 // seconds the slot's pod schedule is shifted by
}

// tpLayouts are the tensor-parallel splits of an 8-GPU node, by node.
var tpLayouts = [][]int{{8}, {4, 4}, {2, 2, 4}, {1, 1, 2, 4}, {2, 2, 2, 2}}

// Fleet is a configured fleet: its slots and schedule.
type Fleet struct {
	cfg   Config
	slots []slot
}

// New lays the fleet out.
func New(cfg Config) (*Fleet, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg}
	for n := range cfg.Nodes {
		layout := tpLayouts[n%len(tpLayouts)]
		if cfg.GPUsPerNode != 8 {
			layout = []int{cfg.GPUsPerNode}
		}
		first := 0
		for _, g := range layout {
			k := len(f.slots)
			f.slots = append(f.slots, slot{node: n, first: first, gpus: g, model: k % cfg.Models,
				offset: float64((k*7919)%3600) / 3600 * cfg.PodLifetime.Seconds()})
			first += g
		}
	}
	return f, nil
}

// Config returns the configuration with its defaults.
func (f *Fleet) Config() Config { return f.cfg }

// GPUs is the number of GPUs of the fleet.
func (f *Fleet) GPUs() int { return f.cfg.Nodes * f.cfg.GPUsPerNode }

func modelName(m int) string    { return fmt.Sprintf("org/model-%02d", m) }
func namespace(m, n int) string { return fmt.Sprintf("team-%02d", m%n) }
func nodeName(n int) string     { return fmt.Sprintf("gpu-node-%04d", n) }

// load is a model's load at unix time t, 0.1..0.9, following the day.
func load(m int, t float64) float64 {
	return 0.5 + 0.4*math.Sin(2*math.Pi*t/day+float64(m))
}

// loadIntegral is ∫load dt from 0 to t.
func loadIntegral(m int, t float64) float64 {
	return 0.5*t - 0.4*day/(2*math.Pi)*(math.Cos(2*math.Pi*t/day+float64(m))-math.Cos(float64(m)))
}

// gpuWatts is one GPU's power at t while its pod serves model m.
func gpuWatts(m int, t float64) float64 { return idleWatts + (peakWatts-idleWatts)*load(m, t) }

// gpuJoules is ∫gpuWatts dt from 0 to t.
func gpuJoules(m int, t float64) float64 {
	return idleWatts*t + (peakWatts-idleWatts)*loadIntegral(m, t)
}

// tokensPerSecond is model m's output token rate per GPU at full load.
func tokensPerSecond(m int) float64 { return 400 + 37*float64(m%13) }

// pod is one generation of a slot: it holds the slot's GPUs over [start, end).
type pod struct {
	s          slot
	gen        int
	start, end float64 // unix seconds
}

func (p pod) name() string {
	return fmt.Sprintf("%s-%04d-%d-g%d", modelName(p.s.model)[4:], p.s.node, p.s.first, p.gen)
}

// pods are the slot's pods overlapping [from, to).
func (f *Fleet) pods(s slot, from, to float64) []pod {
	life, gap := f.cfg.PodLifetime.Seconds(), f.cfg.RolloverGap.Seconds()
	var out []pod
	for g := int(math.Floor((from + s.offset) / life)); ; g++ {
		begin := float64(g)*life - s.offset
		if begin >= to {
			return out
		}
		p := pod{s: s, gen: g, start: begin + gap, end: begin + life}
		if p.end > from {
			out = append(out, p)
		}
	}
}

// podEnergy is a pod's energy counter at t (t within its life): every GPU
// since its first sample.
func podEnergy(p pod, first, t float64) float64 {
	return float64(p.s.gpus) * (gpuJoules(p.s.model, t) - gpuJoules(p.s.model, first))
}

// podTokens is a pod's output token counter at t (whole tokens).
func podTokens(p pod, first, t float64) float64 {
	return math.Floor(float64(p.s.gpus) * tokensPerSecond(p.s.model) * (loadIntegral(p.s.model, t) - loadIntegral(p.s.model, first)))
}

// ModelTotal is what one model's pods did over a range.
type ModelTotal struct {
	Model        string
	EnergyJoules float64
	OutputTokens float64
}

// Totals are the exact energy and tokens of each model over [from, to]
// (both on the exporter's and the engines' grids), as analyze production
// computes them from the counters: each pod's counter at to minus at from,
// a counter reading zero before its first sample and its last value after
// its last.
func (f *Fleet) Totals(from, to time.Time) map[string]ModelTotal {
	a, b := unix(from), unix(to)
	out := map[string]ModelTotal{}
	step, estep := f.cfg.ExporterInterval.Seconds(), f.cfg.EngineInterval.Seconds()
	for _, s := range f.slots {
		for _, p := range f.pods(s, unix(f.cfg.From), unix(f.cfg.To)) {
			first, last, ok := f.sampled(p, step)
			efirst, elast, eok := f.sampled(p, estep)
			m := out[modelName(s.model)]
			m.Model = modelName(s.model)
			if ok {
				m.EnergyJoules += counterAt(podEnergy, p, first, last, b) - counterAt(podEnergy, p, first, last, a)
			}
			if eok {
				m.OutputTokens += counterAt(podTokens, p, efirst, elast, b) - counterAt(podTokens, p, efirst, elast, a)
			}
			out[m.Model] = m
		}
	}
	return out
}

// counterAt is a counter sampled from first to last read at t: zero before
// first, the last value after last (t on the grid).
func counterAt(c func(pod, float64, float64) float64, p pod, first, last, t float64) float64 {
	switch {
	case t < first:
		return 0
	case t > last:
		return c(p, first, last)
	}
	return c(p, first, t)
}

// sampled is the first and last sample times of pod p on a grid of step
// seconds, within the written range; ok false when none.
func (f *Fleet) sampled(p pod, step float64) (first, last float64, ok bool) {
	lo := max(p.start, unix(f.cfg.From))
	hi := min(p.end, unix(f.cfg.To)+step) // [lo, hi)
	first = math.Ceil(lo/step) * step
	last = math.Ceil(hi/step)*step - step
	return first, last, first <= last
}

func unix(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// Names of the engine series written (vLLM).
var (
	mTokens  = contract.EngineName(contract.EngineVLLM, contract.RoleGenerationTokens)
	mPrompt  = contract.EngineName(contract.EngineVLLM, contract.RolePromptTokens)
	mRunning = contract.EngineName(contract.EngineVLLM, contract.RoleRunning)
	mKV      = contract.EngineName(contract.EngineVLLM, contract.RoleKVCache)
)
