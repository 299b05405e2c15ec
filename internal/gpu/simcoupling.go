package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// SimCoupler drives a Sim from a simulated engine in another process: each
// interval it scrapes the engine's /metrics and applies contract.SimEngineLoad and
// contract.SimEngineState. An engine that cannot be reached counts as stopped.
type SimCoupler struct {
	sim      *Sim
	url      string
	interval time.Duration
	client   *http.Client
	log      *slog.Logger
	gpus     []int // the engine's GPUs (SetGPUs); nil: every GPU
}

// SetGPUs couples the engine to these GPU indexes only (a pod's engine on
// the GPUs it holds): its state and load move them and no other; a gpu
// label on its load gauge counts within them.
func (c *SimCoupler) SetGPUs(idx []int) error {
	for _, i := range idx {
		if i < 0 || i >= len(c.sim.gpus) {
			return fmt.Errorf("sim engine %s: no GPU %d", c.url, i)
		}
	}
	c.gpus = idx
	return nil
}

// NewSimCoupler couples sim to the engine at engineURL (its base URL;
// "/metrics" is appended) polled every interval.
func NewSimCoupler(sim *Sim, engineURL string, interval time.Duration) (*SimCoupler, error) {
	u, err := url.Parse(engineURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sim engine URL %q: want http(s)://host:port", engineURL)
	}
	if interval <= 0 {
		return nil, fmt.Errorf("sim engine poll interval %v: want > 0", interval)
	}
	return &SimCoupler{
		sim: sim, url: strings.TrimRight(engineURL, "/") + "/metrics", interval: interval,
		client: &http.Client{Timeout: max(interval, time.Second)},
		log:    slog.New(slog.DiscardHandler),
	}, nil
}

// SetLogger sets where poll failures are logged (debug level).
func (c *SimCoupler) SetLogger(l *slog.Logger) {
	if l != nil {
		c.log = l
	}
}

// Run polls until ctx ends.
func (c *SimCoupler) Run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		if err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			c.log.Debug("sim engine unreachable, treating it as stopped", "url", c.url, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll scrapes the engine once and applies what it says; when the engine
// cannot be read the Sim is set to stopped and the error returned.
func (c *SimCoupler) Poll(ctx context.Context) error {
	state, loads, all, err := c.read(ctx)
	if c.gpus != nil {
		if err != nil {
			state, loads, all = EngineStopped, nil, -1
		}
		for k, i := range c.gpus {
			if l, ok := loads[k]; ok {
				_ = c.sim.SetGPULoad(i, l)
			} else if all >= 0 {
				_ = c.sim.SetGPULoad(i, all)
			}
			_ = c.sim.SetGPUEngineState(i, state)
		}
		return err
	}
	if err != nil {
		c.sim.SetEngineState(EngineStopped)
		return err
	}
	if all >= 0 {
		c.sim.SetLoad(all)
	}
	for i, l := range loads {
		if i < len(c.sim.gpus) {
			_ = c.sim.SetGPULoad(i, l)
		}
	}
	c.sim.SetEngineState(state)
	return nil
}

func (c *SimCoupler) read(ctx context.Context) (state EngineState, perGPU map[int]float64, all float64, err error) {
	all = -1
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return 0, nil, all, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, all, fmt.Errorf("scraping %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, all, fmt.Errorf("scraping %s: HTTP %d", c.url, resp.StatusCode)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	sawState := false
	perGPU = map[int]float64{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, nil, all, fmt.Errorf("parsing %s: %w", c.url, err)
		}
		switch mf.GetName() {
		case contract.SimEngineState:
			for _, m := range mf.GetMetric() {
				v := value(m)
				switch {
				case v >= 1.5:
					state = EngineRunning
				case v >= 0.5:
					state = EngineLoading
				default:
					state = EngineStopped
				}
				sawState = true
			}
		case contract.SimEngineLoad:
			for _, m := range mf.GetMetric() {
				v := value(m)
				idx := -1
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "gpu" {
						if n, err := strconv.Atoi(lp.GetValue()); err == nil {
							idx = n
						}
					}
				}
				if idx >= 0 {
					perGPU[idx] = v
				} else {
					all = v
				}
			}
		}
	}
	if !sawState {
		return 0, nil, -1, fmt.Errorf("%s has no %s gauge", c.url, contract.SimEngineState)
	}
	return state, perGPU, all, nil
}

// value reads a gauge, or an untyped sample (an exposition without TYPE).
func value(m *dto.Metric) float64 {
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// SimPower is the simulated engine's power model: what each of the
// engine's GPUs draws while the engine runs a step. A step that prefills
// p prompt tokens and decodes d tokens in T seconds draws, on each GPU,
//
//	IdleWatts + ActiveWatts + (PrefillJoulesPerToken·p + DecodeJoulesPerToken·d) / T
//
// so its energy on each GPU is (IdleWatts + ActiveWatts)·T plus the
// per-token terms: the coefficients are the exact marginal energy of one
// more prompt or generated token on one GPU (an engine on k GPUs spends
// k times as much). Power rises with the batch and saturates (the step
// time grows with the batch too); prefill draws more than decode. The
// engine turns the watts into the GPUs' load (Load); the Sim's per-GPU
// idle offset (±2 %) makes a GPU's dynamic watts differ from the model's
// by at most 0.3 %.
type SimPower struct {
	// IdleWatts and MaxWatts are the GPUs' (SimConfig's): load 1 is
	// MaxWatts − IdleWatts above idle.
	IdleWatts, MaxWatts float64
	// ActiveWatts is drawn above idle whenever a step runs, whatever its
	// size: clocks up, the weights streamed from memory once per step.
	ActiveWatts float64
	// PrefillJoulesPerToken and DecodeJoulesPerToken are the dynamic
	// energy of one prompt token prefilled and one token decoded, per GPU.
	PrefillJoulesPerToken float64
	DecodeJoulesPerToken  float64
}

// DefaultSimPower is shaped after a 70B-class model on H100-class GPUs
// (700 W) on the default engine's 15 ms + 0.1 ms/sequence decode steps and
// 50 µs/token prefill: per GPU about 270 W decoding one sequence, 350 W at
// a batch of 32, 550 W at 256, 670 W prefilling; docs/demo.md says after
// which published figures.
func DefaultSimPower() SimPower {
	return SimPower{IdleWatts: 70, MaxWatts: 700, ActiveWatts: 200, PrefillJoulesPerToken: 0.02, DecodeJoulesPerToken: 0.045}
}

// Validate checks the model.
func (p SimPower) Validate() error {
	switch {
	case p.IdleWatts < 0 || p.MaxWatts <= p.IdleWatts:
		return fmt.Errorf("power: idle %g W, max %g W: want 0 <= idle < max", p.IdleWatts, p.MaxWatts)
	case p.ActiveWatts < 0 || p.ActiveWatts > p.MaxWatts-p.IdleWatts:
		return fmt.Errorf("power: active %g W: want 0..%g W (max − idle)", p.ActiveWatts, p.MaxWatts-p.IdleWatts)
	case p.PrefillJoulesPerToken < 0 || p.DecodeJoulesPerToken < 0:
		return fmt.Errorf("power: prefill %g J/token, decode %g J/token: want >= 0", p.PrefillJoulesPerToken, p.DecodeJoulesPerToken)
	}
	return nil
}

// Watts is what a step of prefill prompt tokens and decode generated tokens
// lasting step draws on each GPU, above idle.
func (p SimPower) Watts(prefill, decode int, step time.Duration) float64 {
	if step <= 0 {
		return 0
	}
	return p.ActiveWatts + (p.PrefillJoulesPerToken*float64(prefill)+p.DecodeJoulesPerToken*float64(decode))/step.Seconds()
}

// Load is Watts as the GPUs' load in [0, 1] (clamped at MaxWatts).
func (p SimPower) Load(prefill, decode int, step time.Duration) float64 {
	return clamp01(p.Watts(prefill, decode, step) / (p.MaxWatts - p.IdleWatts))
}

// SimMemory is what an engine keeps in one GPU's memory: the weights,
// loaded at startup, and the KV cache, allocated once the weights are in
// (vLLM and SGLang reserve their whole KV cache pool before serving, so
// GPU memory does not move with the batch; their KV usage gauges do).
type SimMemory struct {
	WeightsBytes, KVCacheBytes float64
}

// SetGPUMemory declares what the engine on GPU i keeps in its memory. From
// then on the GPU's memory follows its engine state: nothing when stopped,
// the weights while loading, weights and KV cache while running. A GPU
// never given one reports the simulator's older figure (90 % of 80 GiB
// while an engine works on it).
func (s *Sim) SetGPUMemory(i int, m SimMemory) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.gpus) {
		return fmt.Errorf("sim: no GPU %d", i)
	}
	if m.WeightsBytes < 0 || m.KVCacheBytes < 0 || m.WeightsBytes+m.KVCacheBytes > simMemoryTotal {
		return fmt.Errorf("sim: GPU %d memory: weights %g + KV cache %g bytes: want >= 0 and within %d", i, m.WeightsBytes, m.KVCacheBytes, int64(simMemoryTotal))
	}
	s.gpus[i].mem = &m
	return nil
}

// simMemoryTotal is each simulated GPU's memory.
const simMemoryTotal = float64(80 << 30)

// memoryLocked is GPU g's memory in use and compute processes on it.
// Called with s.mu held.
func (s *Sim) memoryLocked(g *simGPU) (bytes float64, procs int) {
	state := s.state
	if g.own {
		state = g.state
	}
	if g.mem == nil {
		if state == EngineLoading || (state == EngineRunning && g.load > 0) {
			return 0.9 * simMemoryTotal, 1
		}
		return 0, 0
	}
	switch {
	case g.detached || state == EngineStopped:
		return 0, 0
	case state == EngineLoading:
		return g.mem.WeightsBytes, 1
	}
	return g.mem.WeightsBytes + g.mem.KVCacheBytes, 1
}

// SetMemory declares the engine's memory on every GPU (SetGPUMemory): the
// Sim is a simengine.MemorySink.
func (s *Sim) SetMemory(m SimMemory) {
	for i := range s.gpus {
		_ = s.SetGPUMemory(i, m)
	}
}
