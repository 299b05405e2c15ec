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
