package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// ExporterCmd samples GPU power and serves /metrics and the phase API.
// Its flags are exporter.Options itself (Settings: the kong tags of
// exporter.Options, Config, BackendConfig, KubeletConfig and
// gpu.SimConfig), their defaults exporter.DefaultOptions' (set by
// newParser before parsing: defaultsFromTarget); the tuning without a flag
// is read from --config.file (exporter.FileSettings).
type ExporterCmd struct {
	ConfigFile string `name:"config.file" type:"existingfile" placeholder:"FILE" help:"Exporter configuration file (strict YAML): the tuning without a flag (idle.cv_threshold, run.metrics_ttl, nvml.init_timeout; docs/exporter.md)." group:"GPUs and sampling"`

	Settings exporterSettings `embed:""`

	APITokenFile string `name:"web.api-token-file" type:"existingfile" placeholder:"FILE" help:"File holding the bearer token the phase API requires (else env JOULEMARK_API_TOKEN; with neither the API is disabled)." group:"Web and phase API"`

	// RemoteWrite pushes every raw power sample (remote write 1.0).
	RemoteWrite clientflags.RemoteWrite `embed:"" prefix:"remote-write." group:"Remote write (raw samples)"`

	SimLostGPU int `hidden:"" name:"sim.lost-gpu" default:"-1" help:"Simulated GPU whose reads fail with \"GPU is lost\" (NVML's ERROR_GPU_IS_LOST, an Xid 79) from --sim.lost-after on; -1: none." group:"Simulated GPUs"`
}

// exporterSettings is exporter.Options without its methods: kong would
// call its Validate, whose error names the field, not the flag; the
// command's Validate calls it once, after --config.file.
type exporterSettings exporter.Options

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

// options are the exporter's settings the flags and --config.file give,
// without the API token and the remote write (read when it runs).
func (c *ExporterCmd) options() exporter.Options {
	o := exporter.Options(c.Settings)
	o.Backend.Sim.LostGPUs = lostGPUs(c.SimLostGPU)
	o.Backend.Sim.UUIDSeed = c.simUUIDSeed()
	o.Backend.SimAllocations, o.Backend.Interval = o.Kubelet.SimAllocations, o.Config.Interval
	return o
}

// Validate reads --config.file, then refuses settings out of their range
// at parse time, naming the flag or the file's setting (kong hook):
// exporter.Options.Validate is the one validation, its error naming the
// setting's field, which exporterFlags maps to the flag and
// exporter.FileSettings to the file's path.
func (c *ExporterCmd) Validate() error {
	if c.ConfigFile != "" {
		o := exporter.Options(c.Settings)
		if err := o.LoadFile(c.ConfigFile); err != nil {
			return err
		}
		c.Settings = exporterSettings(o)
	}
	err := c.options().Validate()
	var fe *exporter.FieldError
	if errors.As(err, &fe) {
		if flag, ok := exporterFlags[fe.Field]; ok {
			return fmt.Errorf("--%s=%v: want %s", flag, fe.Value, fe.Want)
		}
		for path, field := range exporter.FileSettings {
			if field == fe.Field {
				return fmt.Errorf("--config.file %s: %s=%v: want %s", c.ConfigFile, path, fe.Value, fe.Want)
			}
		}
	}
	return err
}

// exporterFlags are the flags that set the exporter.Options fields a
// *exporter.FieldError names (those of the file: exporter.FileSettings).
var exporterFlags = map[string]string{
	"Backend.GPUs":              "gpus",
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
	"Config.MaxRuns":            "run.max-kept",
	"Config.RunMaxAge":          "run.max-age",
	"Config.MaxRequests":        "web.max-requests",
	"Config.SaveInterval":       "storage.save-interval",
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
	if c.Settings.Backend.Sim.UUIDSeed != "" {
		return c.Settings.Backend.Sim.UUIDSeed
	}
	host, _ := os.Hostname()
	return host + "|" + c.Settings.ListenAddress
}

// apiToken reads the phase API token from file, else env JOULEMARK_API_TOKEN.
func apiToken(file string) (string, error) {
	if file != "" {
		return clientflags.ReadSecret(file, "--web.api-token-file")
	}
	return secretfile.Env(clientflags.TokenEnv)
}
