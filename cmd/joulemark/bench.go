package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/benchjob/experiment"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// BenchCmd drives an OpenAI-compatible engine through the measured lifecycle.
// Its experiment flags are benchjob.Config itself (Settings: its kong tags
// name each flag after the setting's path in the experiment file, `_`
// written `-`; TestBenchFlagsAreYAMLPaths), their defaults benchjob.Defaults'
// (set by newParser before parsing), the defaults of --config too. The
// process and infrastructure flags (exporter URLs, credentials, HTTP client
// files, --config) keep their own names.
type BenchCmd struct {
	ConfigFile string   `name:"config" type:"existingfile" help:"Experiment file (strict YAML: one config, a matrix or a sweep); replaces the config flags below." group:"Experiment"`
	Set        []string `name:"set" sep:"none" help:"Set a setting of the experiment file, over --config or the flags: its path in the file and a YAML value, e.g. engine.ready_timeout=20m (repeatable; the settings without a flag are listed in docs/cli.md)." group:"Experiment"`
	DryRun     bool     `name:"dry-run" help:"With --config: print the expanded runs and exit." group:"Experiment"`

	Settings benchSettings `embed:""`

	TargetHTTP  clientflags.Target      `embed:"" prefix:"target." group:"Target"`
	Exporter    clientflags.Exporter    `embed:"" prefix:"exporter." group:"Exporters"`
	RemoteWrite clientflags.RemoteWrite `embed:"" prefix:"remote-write." group:"Remote write (per-request samples)"`
	Prometheus  clientflags.Prometheus  `embed:"" prefix:"prometheus." group:"Prometheus (pre-flight: the run id is new there)"`

	set []string
}

// benchSettings is benchjob.Config without its methods: kong calls a
// Validate it finds at parse time, before --config and the load defaults
// apply; benchjob.Sweep validates the config once, when it runs.
type benchSettings benchjob.Config

// benchHelpVars are the load defaults the bench flags' help quotes.
func benchHelpVars() kong.Vars {
	return kong.Vars{
		"bench_default_concurrency": strconv.Itoa(benchjob.DefaultConcurrency),
		"bench_default_requests":    strconv.Itoa(benchjob.DefaultFormalRequests),
		"bench_steady_need":         strconv.Itoa(benchjob.SteadyStateNeed(benchjob.DefaultConcurrency)),
	}
}

// benchFileOnly are the settings of the experiment file that have no bench
// flag, each with the reason (docs/cli.md lists them; TestBenchFlagsAreYAMLPaths
// checks that every other setting has its flag).
var benchFileOnly = map[string]string{
	"engine.metrics_interval":         "tuning: how often the engine's /metrics is scraped",
	"remote_write.aggregate_interval": "tuning: how often the per-run aggregates are pushed",
	"remote_write.flush_timeout":      "tuning: bound of the final remote-write flush",
	"prometheus.lookback":             "tuning: how far back the pre-flight looks for the run id",
	"max_lag":                         "tuning: open-loop dispatch lag past which the run is flagged client_could_not_keep_up",
	"require_usage":                   "strictness: fail requests whose stream has no usage (else chunks are counted and the run flagged)",
	"timeouts.connect":                "tuning: connect timeout of one request",
	"extras.min_tokens":               "engine pass-through: min_tokens",
	"extras.seed":                     "engine pass-through: the engine's sampling seed",
	"extras.enable_thinking":          "engine pass-through: chat_template_kwargs.enable_thinking (true or false; absent: not sent)",
	"engine.version":                  "description recorded in the manifest",
	"engine.image":                    "description recorded in the manifest",
	"engine.model_revision":           "description recorded in the manifest",
	"engine.metrics_url":              "tuning: the engine's metrics URL when not the target's root + /metrics",
	"burstiness":                      "open-loop shape: gamma shape of the inter-arrivals (1 = Poisson, <1 burstier)",
	"max_concurrency":                 "open-loop shape: cap on requests in flight",
	"workload.stddev_input_tokens":    "workload shape: input length standard deviation of synthetic prompts",
	"workload.stddev_output_tokens":   "workload shape: output length standard deviation",
	"workload.seed":                   "reproducibility: seed of prompts, lengths and arrivals",
	"timeouts.first_token":            "tuning: first-token timeout of one request",
	"timeouts.idle":                   "tuning: fail a request when no byte of its answer came for this long",
	"timeouts.drain":                  "tuning: how long requests running at the end of the formal duration may finish",
	"engine.quiet_window":             "attached runs: an idle phase this long before the load (with engine.no_lifecycle)",
	"engine.ready_timeout":            "tuning: readiness timeout (/health, /v1/models)",
	"engine.stop_grace":               "tuning: SIGTERM to SIGKILL grace of engine.cmd",
	"engine.release_wait":             "tuning: longest wait for the exporters to report release",
}

// benchInfra are bench's process and infrastructure flags, which keep
// their own names, with the setting of the experiment file each fills
// ("": none).
var benchInfra = map[string]string{
	"config":                         "",
	"set":                            "",
	"dry-run":                        "",
	"target.http-config-file":        "target_http",
	"target.api-key-file":            "api_key_file",
	"exporter.url":                   "exporters",
	"exporter.http-config-file":      "exporter_http",
	"exporter.bearer-token-file":     "exporter_token_file",
	"remote-write.http-config-file":  "remote_write.http",
	"remote-write.bearer-token-file": "remote_write.http",
	"prometheus.http-config-file":    "prometheus.http",
	"prometheus.bearer-token-file":   "prometheus.http",
}

// benchSetting is the path in the experiment file a bench flag sets: its name
// with `-` written `_`, or the infrastructure flag's own.
func benchSetting(flag string) (string, bool) {
	if s, ok := benchInfra[flag]; ok {
		return s, s != ""
	}
	return strings.ReplaceAll(flag, "-", "_"), true
}

// experimentFlags may go with --config.
var experimentFlags = []string{"config", "set", "dry-run", "help", "log.level", "log.format", "version"}

// AfterApply notes which config flags the command line or the environment
// gave (kong hook); defaults do not count.
func (c *BenchCmd) AfterApply(kctx *kong.Context) error {
	for _, p := range kctx.Path {
		if f := p.Flag; f != nil && !slices.Contains(experimentFlags, f.Name) && !slices.Contains(c.set, f.Name) {
			c.set = append(c.set, f.Name)
		}
	}
	for _, f := range kctx.Flags() {
		for _, env := range f.Envs {
			if _, ok := os.LookupEnv(env); ok && !slices.Contains(experimentFlags, f.Name) && !slices.Contains(c.set, f.Name) {
				c.set = append(c.set, f.Name+" (from $"+env+")")
			}
		}
	}
	return nil
}

// setHint is the --set that replaces a flag given with --config.
func setHint(flag string) string {
	name, _, _ := strings.Cut(flag, " ") // "flag (from $ENV)"
	if s, ok := benchSetting(name); ok {
		return s + "=VALUE"
	}
	return "path=value"
}

// Run builds the configs, then runs them one after the other.
func (c *BenchCmd) Run(ctx context.Context, g *Globals) error {
	var cfgs []benchjob.Config
	if c.ConfigFile != "" {
		if len(c.set) > 0 {
			return usageErrorf("--config replaces the config flags: drop --%s (use --set %s)", strings.Join(c.set, ", --"), setHint(c.set[0]))
		}
		runs, err := experiment.LoadBench(c.ConfigFile, c.Set)
		if err != nil {
			return withExitCode(exitUsage, err)
		}
		if c.DryRun {
			return experiment.WriteDryRun(os.Stdout, runs, true)
		}
		for _, r := range runs {
			if r.Name != "" && r.Config.RunID == r.Name {
				// a repeat of the experiment: fresh run ids
				if id := benchjob.FreshRunID(r.Config); id != r.Config.RunID {
					g.Logger().Info("run id taken by an earlier run of the experiment: this one is a repeat", "run_id", id, "name", r.Name)
					r.Config.RunID = id
				}
			}
			cfgs = append(cfgs, r.Config)
		}
	} else {
		if c.DryRun {
			return usageErrorf("--dry-run goes with --config")
		}
		cfg, err := c.config()
		if err != nil {
			return withExitCode(exitUsage, err)
		}
		// Validated once, by benchjob.Sweep, before anything starts.
		cfgs = append(cfgs, cfg)
	}
	opts := benchjob.Options{Logger: g.Logger(), HardStop: hardStop(ctx)}
	var errs []error
	var unusable []string
	for _, cfg := range cfgs {
		if ctx.Err() != nil {
			break
		}
		results, err := benchjob.Sweep(ctx, cfg, opts)
		for _, res := range results {
			fmt.Println()
			if werr := benchjob.WriteSummary(os.Stdout, res); werr != nil {
				errs = append(errs, werr)
			}
			if why := res.Unusable(); res.Status == runarchive.StatusCompleted && len(why) > 0 {
				unusable = append(unusable, "run "+res.RunID+": "+strings.Join(why, "; "))
			}
		}
		if errors.Is(err, benchjob.ErrInvalidConfig) {
			err = withExitCode(exitUsage, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && len(unusable) > 0 {
		return withExitCode(exitUnusable, fmt.Errorf("completed but unusable: %s", strings.Join(unusable, " | ")))
	}
	return errors.Join(errs...)
}

// config is the run the flags give: the embedded experiment settings, the
// workload kind's default written as in an experiment file, the
// infrastructure flags' settings, then the --set overrides.
func (c *BenchCmd) config() (benchjob.Config, error) {
	cfg := benchjob.Config(c.Settings)
	if cfg.Workload.Kind == contract.WorkloadSynthetic {
		cfg.Workload.Kind = "" // the default, as in an experiment file
	}
	cfg.Exporters, cfg.ExporterTokenFile, cfg.APIKeyFile = c.Exporter.URLs, c.Exporter.HTTP.BearerTokenFile, c.TargetHTTP.APIKeyFile
	var err error
	if cfg.TargetHTTP, err = c.TargetHTTP.HTTPConfig(); err != nil {
		return cfg, err
	}
	if cfg.ExporterHTTP, err = c.Exporter.HTTPConfig(); err != nil {
		return cfg, err
	}
	cfg.RemoteWrite.URL = c.RemoteWrite.URL
	if cfg.RemoteWrite.HTTP, err = c.RemoteWrite.HTTPConfig(); err != nil {
		return cfg, err
	}
	cfg.Prometheus.URL = c.Prometheus.URL
	if cfg.Prometheus.HTTP, err = c.Prometheus.HTTPConfig(); err != nil {
		return cfg, err
	}
	return cfg, experiment.ApplySets(&cfg, c.Set)
}
