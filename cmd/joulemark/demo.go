package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/demo"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/report"
)

// DemoCmd runs the whole pipeline on the embedded default. Its flags are
// demo.Config's and demo.Timings' (the lifecycle timings: a timing not
// given takes the preset's, the two-minute demo or with --method-timings
// the method's), with demo.Defaults pre-filled (newParser) as their
// defaults (defaultsFromTarget). Settings that are bench's have bench's
// names; the tuning without a flag is set with --set path=value
// (demoSettings).
type DemoCmd struct {
	Settings demoConfig   `embed:""`
	Timings  demo.Timings `embed:""`
	Set      []string     `name:"set" sep:"none" placeholder:"PATH=VALUE" help:"Set a setting without a flag, over the flags: its path and a YAML value, e.g. steady_state.window=50 (repeatable; the settings are listed in docs/cli.md)."`

	Cost     demoCostFlags    `embed:"" prefix:"cost." group:"Cost and carbon"`
	MaxBatch int              `name:"max-num-seqs" hidden:"" help:"Simulated engine's maximum batch."`
	KVCache  int              `name:"kv-cache-tokens" hidden:"" help:"Simulated engine's KV cache capacity in tokens (blocks of 16; preempts when full)."`
	Prefill  time.Duration    `name:"prefill-per-token" hidden:"" help:"Simulated engine's prefill time per prompt token."`
	Frontend time.Duration    `name:"frontend-delay" hidden:"" help:"Delay every request spends in front of the simulated engine (a router, a proxy) before its scheduler sees it."`
	Dialect  string           `hidden:"" help:"Metric names the simulated engine speaks (vllm or sglang)."`
	Seed     uint64           `hidden:"" help:"Seed of the simulated engine and GPUs."`
	Faults   simengine.Faults `embed:"" prefix:"fault."`

	SLOTTFT time.Duration `name:"slo.ttft" help:"TTFT SLO for goodput (0 disables)."`
	SLOTPOT time.Duration `name:"slo.tpot" help:"TPOT SLO for goodput (0 disables)."`
}

// demoConfig is demo.Config without its methods: kong would call its
// Validate at parse time, before the timings, --set and the scenario;
// demo.Run validates the configuration once.
type demoConfig demo.Config

// demoDefaults pre-fills the demo command with demo.Defaults, which
// defaultsFromTarget makes the flags' defaults (the timings are pointers:
// not given, they take the preset's).
func (c *DemoCmd) demoDefaults() {
	d := demo.Defaults()
	c.Settings = demoConfig(d)
	c.MaxBatch, c.KVCache, c.Prefill, c.Frontend = d.Engine.MaxBatch, d.Engine.KVCacheTokens, d.Engine.PrefillPerToken, d.Engine.FrontendDelay
	c.Dialect, c.Seed, c.Faults = d.Engine.Dialect, d.Engine.Seed, d.Engine.Faults
	c.SLOTTFT, c.SLOTPOT = d.Params.SLOTTFT, d.Params.SLOTPOT
}

// demoSetting is a demo setting without a flag: its --set path, why it has
// no flag, and the field of demo.Config it sets.
type demoSetting struct {
	path, why string
	field     func(*demo.Config) any
}

// demoSettings are the demo's settings without a flag (--set path=value;
// docs/cli.md lists them), formerly hidden flags.
var demoSettings = []demoSetting{
	{"sample.interval", "tuning: the simulated exporter's sampling period", func(c *demo.Config) any { return &c.SampleInterval }},
	{"scrape.interval", "tuning: the embedded Prometheus' scrape period", func(c *demo.Config) any { return &c.ScrapeInterval }},
	{"workload.stddev_output_tokens", "workload shape: output length standard deviation", func(c *demo.Config) any { return &c.OutputStddev }},
	{"steady_state.window", "analysis tuning: requests per steady-state window", func(c *demo.Config) any { return &c.Params.SSWindow }},
	{"steady_state.windows", "analysis tuning: consecutive steady-state windows", func(c *demo.Config) any { return &c.Params.SSWindows }},
	{"steady_state.cv", "analysis tuning: CV threshold of every window", func(c *demo.Config) any { return &c.Params.SSCV }},
	{"steady_state.weighting", "analysis tuning: how a request counts in a window's CV (tokens or requests)", func(c *demo.Config) any { return &c.Params.SSWeighting }},
}

// applySets sets the --set settings on cfg, each value YAML.
func applySets(cfg *demo.Config, sets []string) error {
	for _, s := range sets {
		path, value, ok := strings.Cut(s, "=")
		i := slices.IndexFunc(demoSettings, func(d demoSetting) bool { return d.path == path })
		if !ok || i < 0 {
			var paths []string
			for _, d := range demoSettings {
				paths = append(paths, d.path)
			}
			return usageErrorf("--set %q: want PATH=VALUE, PATH one of %s", s, strings.Join(paths, ", "))
		}
		if err := yaml.Unmarshal([]byte(value), demoSettings[i].field(cfg)); err != nil {
			return usageErrorf("--set %s: %w", s, err)
		}
	}
	return nil
}

// Config is the demo configuration the flags give.
func (c *DemoCmd) Config() (demo.Config, error) {
	cfg := demo.Config(c.Settings)
	c.Timings.Apply(&cfg)
	cfg.Engine.MaxBatch, cfg.Engine.Seed, cfg.Sim.Seed = c.MaxBatch, c.Seed, c.Seed
	cfg.Engine.KVCacheTokens, cfg.Engine.PrefillPerToken, cfg.Engine.FrontendDelay = c.KVCache, c.Prefill, c.Frontend
	cfg.Engine.Dialect = c.Dialect
	cfg.Cost = report.CostInputs{PricePerKWh: c.Cost.PricePerKWh, Currency: c.Cost.Currency,
		CarbonIntensity: c.Cost.CarbonIntensity, PUE: c.Cost.PUE}
	cfg.Engine.Faults = c.Faults
	cfg.Params.SLOTTFT, cfg.Params.SLOTPOT = c.SLOTTFT, c.SLOTPOT
	if err := applySets(&cfg, c.Set); err != nil {
		return cfg, err
	}
	return cfg, demo.ApplyScenario(&cfg, cfg.Scenario)
}

// Run runs the demo until the report is written (or Ctrl-C).
func (c *DemoCmd) Run(ctx context.Context, g *Globals) error {
	cfg, err := c.Config()
	if err != nil {
		return err
	}
	cfg.Out = os.Stdout
	cfg.Logger = g.Logger()
	res, err := demo.Run(ctx, cfg)
	if err != nil && res != nil {
		g.Logger().Error("demo did not finish; what it wrote is kept", "dir", res.Dir)
	}
	return err
}

// demoCostFlags are the cost inputs the demo prices its report and
// production view with and defines in its Prometheus (the fleet
// dashboard's cost row): analyze's --cost.* without the live carbon query
// and the host energy basis, which the simulated node cannot feed.
type demoCostFlags struct {
	PricePerKWh     *float64 `name:"price-per-kwh" placeholder:"PRICE" help:"Energy price per kWh (in --cost.currency): adds cost figures."`
	Currency        string   `name:"currency" placeholder:"CODE" help:"Currency of --cost.price-per-kwh, a label (e.g. EUR)."`
	CarbonIntensity *float64 `name:"carbon-intensity" placeholder:"G_PER_KWH" help:"Grid carbon intensity, gCO2e per kWh: adds emission figures."`
	PUE             *float64 `name:"pue" placeholder:"RATIO" help:"Facility power usage effectiveness (≥ 1), applied to the energy counted; required for any cost or emission figure."`
}
