package exporter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/internal/gpu"
)

// DefaultOptions are the exporter command's defaults, every setting set:
// its flags show them (Options' kong tags make it the flag model) and the
// configuration file's settings start from them.
func DefaultOptions() Options {
	cfg := Defaults()
	cfg.StoragePath = "data/"
	return Options{
		Backend: BackendConfig{
			Kind: BackendNVML, NVMLInitTimeout: 2 * time.Minute, NVMLRetryInterval: 10 * time.Second,
			Sim: gpu.SimDefaults(), SimHangGPU: -1, SimDownGPU: -1,
		},
		Kubelet: KubeletDefaults(), PowercapPath: "/sys/class/powercap",
		Config: cfg, ListenAddress: ":9402", GoMaxProcs: 1,
	}
}

// FileSettings are the settings of the exporter's configuration file
// (joulemark exporter --config.file): the tuning of the work that has no
// flag, each by its path in the file and its field in Options (the field a
// *FieldError names).
var FileSettings = map[string]string{
	"idle.cv_threshold": "Config.IdleCVThreshold",
	"run.metrics_ttl":   "Config.RunMetricsTTL",
	"nvml.init_timeout": "Backend.NVMLInitTimeout",
}

// fileIdle, fileRun and fileNVML are the sections of the configuration
// file; their fields point at the Options fields they set (a key absent
// from the file leaves its field as it was).
type fileIdle struct {
	CVThreshold *float64 `yaml:"cv_threshold"`
}

type fileRun struct {
	MetricsTTL *time.Duration `yaml:"metrics_ttl"`
}

type fileNVML struct {
	InitTimeout *time.Duration `yaml:"init_timeout"`
}

type file struct {
	Idle fileIdle `yaml:"idle"`
	Run  fileRun  `yaml:"run"`
	NVML fileNVML `yaml:"nvml"`
}

// LoadFile reads the configuration file at path (strict YAML: an unknown
// key is an error) into o's file settings; it validates nothing (Validate
// does, its *FieldError naming the field FileSettings maps to the path).
func (o *Options) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("exporter config file: %w", err)
	}
	f := file{
		Idle: fileIdle{CVThreshold: &o.Config.IdleCVThreshold},
		Run:  fileRun{MetricsTTL: &o.Config.RunMetricsTTL},
		NVML: fileNVML{InitTimeout: &o.Backend.NVMLInitTimeout},
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("exporter config file %s: %w", path, err)
	}
	return nil
}
