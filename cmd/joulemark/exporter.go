package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// ExporterCmd samples GPU power and serves /metrics and the phase API.
type ExporterCmd struct {
	GPU                      string        `name:"gpu" default:"nvml" enum:"nvml,sim" help:"GPU backend: nvml (NVIDIA driver) or sim (simulated GPUs)." group:"GPUs and sampling"`
	GPUs                     int           `name:"gpus" default:"0" help:"GPUs to read: the first N with nvml (0: all); the number of simulated GPUs with sim (0: 8)." group:"GPUs and sampling"`
	Interval                 time.Duration `name:"sample.interval" default:"${exporter_interval}" help:"Power sampling period (10ms or more)." group:"GPUs and sampling"`
	Retention                time.Duration `name:"sample.retention" default:"${exporter_retention}" help:"How long raw samples are kept in memory." group:"GPUs and sampling"`
	ListenAddress            string        `name:"web.listen-address" default:":9402" help:"Address to serve /metrics and the API on." group:"Web and phase API"`
	MaxRequests              int           `name:"web.max-requests" default:"${exporter_max_requests}" help:"Maximum number of parallel /metrics requests; more are answered 503. Use 0 to disable." group:"Web and phase API"`
	WebConfigFile            string        `name:"web.config.file" default:"" help:"Prometheus exporter-toolkit web config (TLS, basic auth) for every endpoint." group:"Web and phase API"`
	APITokenFile             string        `name:"web.api-token-file" type:"existingfile" placeholder:"FILE" help:"File holding the bearer token the phase API requires (else env JOULEMARK_API_TOKEN; with neither the API is disabled)." group:"Web and phase API"`
	ReleaseTolerance         float64       `name:"release.tolerance" default:"${exporter_release_tolerance}" help:"The release phase closes when every GPU is back within this fraction of its idle baseline for --release.hold." group:"Release detection"`
	ReleaseHold              time.Duration `name:"release.hold" default:"${exporter_release_hold}" help:"How long every GPU must stay within --release.tolerance of its baseline; the release ends where this hold began." group:"Release detection"`
	ReleaseMaxWait           time.Duration `name:"release.max-wait" default:"${exporter_release_max_wait}" help:"A release not closed after this long ends with joulemark_run_release_closed 0." group:"Release detection"`
	ReleaseRequireEngineExit bool          `name:"release.require-engine-exit" help:"The release's process criterion is met only when the bench reports the engine's exit (bench with --engine.cmd or --engine.stop), never from NVML's compute process list; a run without the report times out at --release.max-wait." group:"Release detection"`
	IdleCVThreshold          float64       `hidden:"" name:"idle.cv-threshold" default:"${exporter_idle_cv_threshold}" help:"An idle phase whose power CV reaches this on any GPU is flagged unstable." group:"Release detection"`
	MaxRuns                  int           `name:"run.max-kept" default:"${exporter_max_runs}" help:"Runs kept in memory and served by the API: finished ones beyond it are evicted oldest first (on /metrics for --run.metrics-ttl), active ones beyond it refused." group:"Runs and durable state"`
	PowercapPath             string        `name:"host.powercap-path" default:"/sys/class/powercap" help:"Powercap tree whose RAPL zones (CPU packages, DRAM) give host energy beside the GPUs; empty: no host energy." group:"Host and pods"`
	StoragePath              string        `name:"storage.path" default:"data/" help:"Directory of the durable state: every run ID used (refused again after eviction or restart) and the active runs (restored on start); empty: nothing is kept across restarts." group:"Runs and durable state"`
	SaveInterval             time.Duration `hidden:"" name:"storage.save-interval" default:"${exporter_save_interval}" help:"How often the energy counters are saved while no run is active (every second while one is), besides every phase change and the shutdown; one file write per save, whatever the GPUs and the sampling rate." group:"Runs and durable state"`
	RunMaxAge                time.Duration `name:"run.max-age" default:"${exporter_run_max_age}" help:"A run still active this long after its first phase ends with reason expired." group:"Runs and durable state"`
	RunMetricsTTL            time.Duration `hidden:"" name:"run.metrics-ttl" default:"${exporter_run_metrics_ttl}" help:"A finished run leaves /metrics this long after its final values are known (the API serves it until --run.max-kept evicts it); 0: it stays on /metrics until then too." group:"Runs and durable state"`
	Kubelet                  kubeletFlags  `embed:"" group:"Host and pods"`

	// RemoteWrite pushes every raw power sample (remote write 1.0).
	RemoteWrite clientflags.RemoteWrite `embed:"" prefix:"remote-write." group:"Remote write (raw samples)"`

	NVMLInitTimeout   time.Duration `hidden:"" name:"nvml.init-timeout" default:"2m" help:"With --gpu=nvml: how long NVML's init (and opening a first GPU) is retried, with backoff, before the exporter gives up; GPUs failing after that are listed down and retried; 0: one attempt." group:"GPUs and sampling"`
	NVMLRetryInterval time.Duration `hidden:"" name:"nvml.retry-interval" default:"10s" help:"With --gpu=nvml: how long after failing to open a GPU is opened again (listed with joulemark_gpu_up 0 meanwhile); the wait doubles after each failed attempt, up to 5m (or this, if longer)." group:"GPUs and sampling"`

	SimEngineURL     []string      `hidden:"" name:"sim.engine-url" help:"With --gpu=sim: base URL of a simulated engine whose /metrics drive the simulated load (joulemark_sim_engine_load_ratio, joulemark_sim_engine_state); repeatable as namespace/pod=URL, each engine then driving only the GPUs its pod holds in --sim.allocations." group:"Simulated GPUs"`
	SimIdleWatts     float64       `hidden:"" name:"sim.idle-watts" default:"${sim_idle_watts}" help:"Simulated idle power per GPU." group:"Simulated GPUs"`
	SimMaxWatts      float64       `hidden:"" name:"sim.max-watts" default:"${sim_max_watts}" help:"Simulated power at full load." group:"Simulated GPUs"`
	SimStartupWatts  float64       `hidden:"" name:"sim.startup-watts" default:"${sim_startup_watts}" help:"Simulated power while the engine loads." group:"Simulated GPUs"`
	SimRampSeconds   float64       `hidden:"" name:"sim.ramp-seconds" default:"${sim_ramp_seconds}" help:"Time constant of simulated power rises." group:"Simulated GPUs"`
	SimDecaySeconds  float64       `hidden:"" name:"sim.decay-seconds" default:"${sim_decay_seconds}" help:"Time constant of the simulated release decay." group:"Simulated GPUs"`
	SimNoiseWatts    float64       `hidden:"" name:"sim.noise-watts" default:"${sim_noise_watts}" help:"RMS of the simulated power noise." group:"Simulated GPUs"`
	SimSeed          uint64        `hidden:"" name:"sim.seed" default:"${sim_seed}" help:"Seed of the simulated noise." group:"Simulated GPUs"`
	SimUUIDSeed      string        `hidden:"" name:"sim.uuid-seed" default:"" help:"Seed of the simulated GPUs' UUIDs: exporters with different seeds report different UUIDs, as two hosts' GPUs do (default: the host name and --web.listen-address; give the same seed to two exporters to make their UUIDs collide)." group:"Simulated GPUs"`
	SimEnergyCounter bool          `hidden:"" name:"sim.energy-counter" help:"Simulated GPUs report an energy counter (else energy is integrated)." group:"Simulated GPUs"`
	SimCounterPeriod time.Duration `hidden:"" name:"sim.counter-period" default:"0s" help:"How often the simulated energy counter updates (real drivers: about 100ms; 0: continuously)." group:"Simulated GPUs"`
	SimCounterOffset time.Duration `hidden:"" name:"sim.counter-offset" default:"0s" help:"Phase of the simulated counter's update grid (updates at offset + k·period)." group:"Simulated GPUs"`
	SimCounterJitter time.Duration `hidden:"" name:"sim.counter-jitter" default:"0s" help:"Each simulated counter update moves by a seeded amount within ±this (at most 0.45·--sim.counter-period)." group:"Simulated GPUs"`
	SimPowerBias     float64       `hidden:"" name:"sim.power-bias" default:"${sim_power_bias}" help:"Simulated power readings are this factor times the power the simulated energy counter integrates (a real GPU's instant power may read a few percent off its counter); 0.5..1.5." group:"Simulated GPUs"`
	SimHangGPU       int           `hidden:"" name:"sim.hang-gpu" default:"-1" help:"Simulated GPU whose reads hang (as a hung driver call) after --sim.hang-after; -1: none." group:"Simulated GPUs"`
	SimHangAfter     time.Duration `hidden:"" name:"sim.hang-after" default:"0s" help:"When the reads of --sim.hang-gpu start hanging, after the exporter starts." group:"Simulated GPUs"`
	SimHangShutdown  bool          `hidden:"" name:"sim.hang-shutdown" help:"With --sim.hang-gpu: the hung call also blocks the backend's shutdown for good, as NVML's shutdown behind a hung driver call (the exporter exits anyway, after a bounded wait)." group:"Simulated GPUs"`
	SimDownGPU       int           `hidden:"" name:"sim.down-gpu" default:"-1" help:"Simulated GPU that fails to open at start (as a GPU failing nvmlDeviceGetHandleByIndex): listed with joulemark_gpu_up 0 and no uuid until --sim.down-for has passed; -1: none." group:"Simulated GPUs"`
	SimDownFor       time.Duration `hidden:"" name:"sim.down-for" default:"0s" help:"How long --sim.down-gpu stays down after the start (0: for good)." group:"Simulated GPUs"`
	SimLostGPU       int           `hidden:"" name:"sim.lost-gpu" default:"-1" help:"Simulated GPU whose reads fail with \"GPU is lost\" (NVML's ERROR_GPU_IS_LOST, an Xid 79) from --sim.lost-after on; -1: none." group:"Simulated GPUs"`
	SimLostAfter     time.Duration `hidden:"" name:"sim.lost-after" default:"0s" help:"When --sim.lost-gpu is lost, after the exporter starts." group:"Simulated GPUs"`
	SimLostFor       time.Duration `hidden:"" name:"sim.lost-for" default:"0s" help:"How long --sim.lost-gpu stays lost (0: for good); it then answers again with the same UUID." group:"Simulated GPUs"`
	SimCounterJump   time.Duration `hidden:"" name:"sim.counter-jump-after" default:"0s" help:"With --sim.energy-counter: one energy counter read, the first of any GPU this long after the start, returns the counter plus 1e12 mJ (a bogus read); 0: none." group:"Simulated GPUs"`
}

// Run starts the exporter and serves until SIGINT or SIGTERM.
func (c *ExporterCmd) Run(ctx context.Context, g *Globals) error {
	return c.run(ctx, g.Logger())
}

func (c *ExporterCmd) run(ctx context.Context, log *slog.Logger) error {
	token, err := apiToken(c.APITokenFile)
	if err != nil {
		return err
	}
	if token != "" && len(token) < exporter.MinTokenBytes {
		src := "JOULEMARK_API_TOKEN"
		if c.APITokenFile != "" {
			src = c.APITokenFile
		}
		return fmt.Errorf("API token from %s is %d bytes: want at least %d (e.g. head -c 32 /dev/urandom | base64)", src, len(token), exporter.MinTokenBytes)
	}
	o := c.options()
	o.Config.APIToken = token
	if c.RemoteWrite.URL != "" {
		hc, err := c.RemoteWrite.HTTPConfig()
		if err != nil {
			return withExitCode(exitUsage, err)
		}
		o.Config.RemoteWrite = &remotewrite.Config{URL: c.RemoteWrite.URL, UserAgent: "joulemark-exporter", HTTP: hc}
		host, _ := os.Hostname()
		o.Config.RemoteWriteLabels = map[string]string{"instance": host, "job": "joulemark-exporter"}
	}
	return exporter.Main(ctx, o, log)
}

// options are the exporter's settings the flags give, without the API
// token and the remote write (read when it runs).
func (c *ExporterCmd) options() exporter.Options {
	return exporter.Options{
		Backend: c.backendConfig(), Kubelet: c.Kubelet.config(), PowercapPath: c.PowercapPath,
		ListenAddress: c.ListenAddress, WebConfigFile: c.WebConfigFile,
		Config: exporter.Config{
			Interval: c.Interval, Retention: c.Retention,
			ReleaseTolerance: c.ReleaseTolerance, ReleaseHold: c.ReleaseHold, ReleaseMaxWait: c.ReleaseMaxWait,
			ReleaseRequireEngineExit: c.ReleaseRequireEngineExit, IdleCVThreshold: c.IdleCVThreshold, MaxRuns: c.MaxRuns,
			MaxRequests: c.MaxRequests, StoragePath: c.StoragePath, SaveInterval: c.SaveInterval, RunMaxAge: c.RunMaxAge, RunMetricsTTL: c.RunMetricsTTL,
		},
	}
}

// Validate refuses settings out of their range at parse time, naming the
// flag (kong hook): exporter.Options.Validate is the one validation, its
// error naming the setting's field, which exporterFlags maps to the flag.
func (c *ExporterCmd) Validate() error {
	err := c.options().Validate()
	var fe *exporter.FieldError
	if errors.As(err, &fe) {
		if flag, ok := exporterFlags[fe.Field]; ok {
			return fmt.Errorf("--%s=%v: want %s", flag, fe.Value, fe.Want)
		}
	}
	return err
}

// exporterFlags are the flags that set the exporter.Options fields a
// *exporter.FieldError names.
var exporterFlags = map[string]string{
	"Backend.GPUs":              "gpus",
	"Backend.NVMLInitTimeout":   "nvml.init-timeout",
	"Backend.NVMLRetryInterval": "nvml.retry-interval",
	"Backend.Sim.IdleWatts":     "sim.idle-watts",
	"Backend.Sim.MaxWatts":      "sim.max-watts",
	"Backend.Sim.StartupWatts":  "sim.startup-watts",
	"Backend.Sim.RampSeconds":   "sim.ramp-seconds",
	"Backend.Sim.DecayTau":      "sim.decay-seconds",
	"Backend.Sim.PowerBias":     "sim.power-bias",
	"Kubelet.Refresh":           "kubelet.refresh-interval",
	"Kubelet.ProcFS":            "path.procfs",
	"Kubelet.Checkpoint":        "kubelet.device-checkpoint-file",
	"Config.Interval":           "sample.interval",
	"Config.SlowInterval":       "sample.interval",
	"Config.Retention":          "sample.retention",
	"Config.ReleaseTolerance":   "release.tolerance",
	"Config.ReleaseHold":        "release.hold",
	"Config.ReleaseMaxWait":     "release.max-wait",
	"Config.IdleCVThreshold":    "idle.cv-threshold",
	"Config.MaxRuns":            "run.max-kept",
	"Config.RunMaxAge":          "run.max-age",
	"Config.RunMetricsTTL":      "run.metrics-ttl",
	"Config.MaxRequests":        "web.max-requests",
	"Config.SaveInterval":       "storage.save-interval",
}

// backendConfig is the GPU backend the flags select.
func (c *ExporterCmd) backendConfig() exporter.BackendConfig {
	return exporter.BackendConfig{
		Kind: c.GPU, GPUs: c.GPUs, NVMLInitTimeout: c.NVMLInitTimeout, NVMLRetryInterval: c.NVMLRetryInterval,
		Sim: gpu.SimConfig{
			IdleWatts: c.SimIdleWatts, MaxWatts: c.SimMaxWatts, StartupWatts: c.SimStartupWatts,
			RampSeconds: c.SimRampSeconds, DecayTau: c.SimDecaySeconds, NoiseWatts: c.SimNoiseWatts,
			Seed: c.SimSeed, EnergyCounter: c.SimEnergyCounter, CounterPeriod: c.SimCounterPeriod,
			CounterOffset: c.SimCounterOffset, CounterJitter: c.SimCounterJitter, HangBlocksClose: c.SimHangShutdown,
			DownFor: c.SimDownFor, PowerBias: c.SimPowerBias, UUIDSeed: c.simUUIDSeed(),
			LostAfter: c.SimLostAfter, LostFor: c.SimLostFor, CounterJumpAfter: c.SimCounterJump, LostGPUs: lostGPUs(c.SimLostGPU),
		},
		SimHangGPU: c.SimHangGPU, SimHangAfter: c.SimHangAfter, SimDownGPU: c.SimDownGPU,
		SimEngineURLs: c.SimEngineURL, SimAllocations: c.Kubelet.SimAllocations, Interval: c.Interval,
	}
}

// lostGPUs is --sim.lost-gpu as a list (-1: none).
func lostGPUs(i int) []int {
	if i == -1 {
		return nil
	}
	return []int{i}
}

// simUUIDSeed is --sim.uuid-seed, by default the host name and the listen
// address: two simulated exporters, on two hosts or two ports, never
// report the same GPU UUID.
func (c *ExporterCmd) simUUIDSeed() string {
	if c.SimUUIDSeed != "" {
		return c.SimUUIDSeed
	}
	host, _ := os.Hostname()
	return host + "|" + c.ListenAddress
}

// exporterDefaults are the exporter's flag defaults, from the packages'
// defaults (exporter.Defaults, KubeletDefaults, gpu.SimDefaults): one
// source.
func exporterDefaults() kong.Vars {
	d, sim, k := exporter.Defaults(), gpu.SimDefaults(), exporter.KubeletDefaults()
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return kong.Vars{
		"exporter_interval":          shortDuration(d.Interval),
		"exporter_retention":         shortDuration(d.Retention),
		"exporter_max_requests":      strconv.Itoa(d.MaxRequests),
		"exporter_release_tolerance": f(d.ReleaseTolerance),
		"exporter_release_hold":      shortDuration(d.ReleaseHold),
		"exporter_release_max_wait":  shortDuration(d.ReleaseMaxWait),
		"exporter_idle_cv_threshold": f(d.IdleCVThreshold),
		"exporter_max_runs":          strconv.Itoa(d.MaxRuns),
		"exporter_save_interval":     shortDuration(d.SaveInterval),
		"exporter_run_max_age":       shortDuration(d.RunMaxAge),
		"exporter_run_metrics_ttl":   shortDuration(d.RunMetricsTTL),
		"sim_idle_watts":             f(sim.IdleWatts),
		"sim_max_watts":              f(sim.MaxWatts),
		"sim_startup_watts":          f(sim.StartupWatts),
		"sim_ramp_seconds":           f(sim.RampSeconds),
		"sim_decay_seconds":          f(sim.DecayTau),
		"sim_noise_watts":            f(sim.NoiseWatts),
		"sim_seed":                   strconv.FormatUint(sim.Seed, 10),
		"sim_power_bias":             f(sim.PowerBias),
		"kubelet_socket":             k.Socket,
		"kubelet_refresh_interval":   shortDuration(k.Refresh),
		"kubelet_gpu_resource":       strings.Join(k.GPUResources, ","),
		"kubelet_checkpoint":         k.Checkpoint,
		"path_procfs":                k.ProcFS,
	}
}

// shortDuration is d as Prometheus writes it: 15m, not 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// apiToken reads the phase API token from file, else env JOULEMARK_API_TOKEN.
func apiToken(file string) (string, error) {
	if file != "" {
		return clientflags.ReadSecret(file, "--web.api-token-file")
	}
	return secretfile.Env(clientflags.TokenEnv)
}
