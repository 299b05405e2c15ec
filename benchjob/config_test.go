package benchjob

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/contract/runidtest"
	"github.com/prometheus/common/config"
)

func validConfig() Config {
	c := Defaults()
	c.Target = "http://127.0.0.1:8000/v1"
	c.Concurrency = 4
	c.Requests = 10
	c.Engine.Cmd = "vllm serve x"
	return c
}

// The bench accepts exactly the ids of the shared table (the exporter's
// API and the demo test the same table); an empty id means "generate one".
func TestConfigValidateRunID(t *testing.T) {
	for _, tc := range runidtest.Cases {
		if tc.ID == "" {
			continue
		}
		c := validConfig()
		c.RunID = tc.ID
		err := c.Validate()
		if (err == nil) != tc.Valid {
			t.Errorf("run_id %q: %v, want valid=%v", tc.ID, err, tc.Valid)
		}
		if err != nil && !strings.Contains(err.Error(), "run_id:") {
			t.Errorf("run_id %q: error %q does not name the field", tc.ID, err)
		}
	}
	c := validConfig()
	c.RunID = ""
	if err := c.Validate(); err != nil {
		t.Errorf("empty run_id: %v", err)
	}
	// Each sweep point's id (<run_id>-c16) must be valid too.
	c.Concurrency, c.SweepConcurrency, c.RunID = 0, []int{1, 16}, strings.Repeat("x", 125)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "sweep point") {
		t.Errorf("sweep point id of 129 characters: %v", err)
	}
	c.RunID = strings.Repeat("x", 124)
	if err := c.Validate(); err != nil {
		t.Errorf("sweep point ids of 128 characters: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := validConfig
	neg := -1
	zero := 0
	tests := []struct {
		name string
		mod  func(*Config)
		want []string // empty: valid
	}{
		{"valid", func(*Config) {}, nil},
		{"valid open loop", func(c *Config) { c.Concurrency, c.Rate, c.Burstiness, c.MaxConcurrency = 0, 5, 0.5, 8 }, nil},
		{"valid duration only", func(c *Config) { c.Requests, c.Duration = 0, time.Minute }, nil},
		{"valid trace", func(c *Config) { c.Concurrency, c.Requests, c.Workload.Trace = 0, 0, "t.jsonl" }, nil},
		{"valid sweep", func(c *Config) { c.Concurrency, c.SweepConcurrency = 0, []int{1, 2} }, nil},
		{"no target", func(c *Config) { c.Target = "" }, []string{"target: required"}},
		{"bad target", func(c *Config) { c.Target = "localhost:8000" }, []string{"target:", "not an http(s) URL"}},
		{"bad endpoint", func(c *Config) { c.Endpoint = "embeddings" }, []string{"endpoint:", "completions or chat"}},
		{"both loops", func(c *Config) { c.Rate = 3 }, []string{"exclude each other"}},
		{"negative concurrency", func(c *Config) { c.Concurrency = -1 }, []string{"concurrency: -1 must not be negative"}},
		{"burstiness closed", func(c *Config) { c.Burstiness = 2 }, []string{"burstiness"}},
		{"cap closed", func(c *Config) { c.MaxConcurrency = 2 }, []string{"max_concurrency"}},
		{"trace and rate", func(c *Config) { c.Concurrency, c.Rate, c.Workload.Trace = 0, 2, "t" }, []string{"workload.trace"}},
		{"dataset and trace", func(c *Config) { c.Concurrency, c.Workload.Dataset, c.Workload.Trace = 0, "d", "t" }, []string{"workload.dataset"}},
		{"no input length", func(c *Config) { c.Workload.MeanInputTokens = 0 }, []string{"workload.mean_input_tokens"}},
		{"bad sweep", func(c *Config) { c.Concurrency, c.SweepConcurrency = 0, []int{1, 0} }, []string{"sweep_concurrency: value 0 (#2)"}},
		{"sweep too large", func(c *Config) {
			c.Concurrency, c.SweepConcurrency, c.Repeat = 0, make([]int, 101), 100
			for i := range c.SweepConcurrency {
				c.SweepConcurrency[i] = i + 1
			}
		}, []string{"sweep_concurrency: 101 sweep values × repeat 100 is 10100 runs, more than the 10000 allowed"}},
		{"two sweeps", func(c *Config) { c.Concurrency, c.SweepConcurrency, c.SweepRate = 0, []int{1}, []float64{1} }, []string{"not both"}},
		{"negative min tokens", func(c *Config) { c.Extras.MinTokens = &neg }, []string{"extras.min_tokens"}},
		{"zero max tokens", func(c *Config) { c.Extras.MaxTokens = &zero }, []string{"extras.max_tokens"}},
		{"cmd and hooks", func(c *Config) { c.Engine.Start, c.Engine.Stop = "a", "b" }, []string{"engine.cmd"}},
		{"start without stop", func(c *Config) { c.Engine.Cmd, c.Engine.Start = "", "a" }, []string{"engine.start"}},
		{"no lifecycle with cmd", func(c *Config) { c.Engine.NoLifecycle = true }, []string{"engine.no_lifecycle"}},
		{"ready timeout", func(c *Config) { c.Engine.ReadyTimeout = 0 }, []string{"engine.ready_timeout"}},
		{"repeat attached", func(c *Config) { c.Engine.Cmd, c.Engine.NoLifecycle, c.Repeat = "", true, 3 }, []string{"repeat: 3 repetitions with engine.no_lifecycle (--engine.no-lifecycle): a repetition is a cold lifecycle"}},
		{"valid attached, one repetition", func(c *Config) { c.Engine.Cmd, c.Engine.NoLifecycle, c.Repeat = "", true, 1 }, nil},
		{"bad exporter", func(c *Config) { c.Exporters = []string{"http://ok:1", "nohost"} }, []string{"exporters: #2"}},
		{"bad remote write", func(c *Config) { c.RemoteWrite.URL = "prom:9090" }, []string{"remote_write.url"}},
		// A zero that would have been replaced by the default is refused.
		{"zero metrics interval", func(c *Config) { c.Engine.MetricsInterval = 0 }, []string{"engine.metrics_interval: 0s must be positive"}},
		{"zero aggregate interval", func(c *Config) { c.RemoteWrite.AggregateInterval = 0 }, []string{"remote_write.aggregate_interval: 0s must be positive"}},
		{"zero flush timeout", func(c *Config) { c.RemoteWrite.FlushTimeout = 0 }, []string{"remote_write.flush_timeout: 0s must be positive"}},
		{"zero lookback", func(c *Config) { c.Prometheus.URL, c.Prometheus.Lookback = "http://p:9090", 0 }, []string{"prometheus.lookback: 0s must be positive"}},
		{"correctness without max_tokens", func(c *Config) { c.Workload.Kind, c.Workload.MeanOutputTokens = contract.WorkloadCorrectness, 0 }, []string{"workload.mean_output_tokens"}},
		{"pod and gpus", func(c *Config) { c.Engine.Pod, c.ExporterGPUs = "ns/p", []string{"GPU-1"} }, []string{"gpus: give gpus or engine.pod"}},
		{"bad pod", func(c *Config) { c.Engine.Pod = "p" }, []string{"engine.pod:", "namespace/name"}},
		{"bad run id", func(c *Config) { c.RunID = "../etc" }, []string{"run_id"}},
		{"no runs dir", func(c *Config) { c.RunsDir = "" }, []string{"runs_dir"}},
		{"negative max lag", func(c *Config) { c.MaxLag = -1 }, []string{"max_lag"}},
		{"negative flush", func(c *Config) { c.RemoteWrite.FlushTimeout = -1 }, []string{"remote_write"}},
		{"key file and target authorization", func(c *Config) {
			c.APIKeyFile, c.TargetHTTP.Authorization = "k", &config.Authorization{Credentials: "x"}
		}, []string{"api_key_file", "target_http.authorization"}},
		{"key file and target basic auth", func(c *Config) {
			c.APIKeyFile, c.TargetHTTP.BasicAuth = "k", &config.BasicAuth{Username: "u"}
		}, []string{"api_key_file", "target_http.basic_auth"}},
		{"bad target http", func(c *Config) {
			c.TargetHTTP.BearerToken, c.TargetHTTP.BearerTokenFile = "a", "b"
		}, []string{"target_http"}},
		{"several at once", func(c *Config) { c.Target, c.Endpoint = "", "x" }, []string{"target:", "endpoint:"}},
		{"infinite rate", func(c *Config) { c.Concurrency, c.Rate = 0, math.Inf(1) }, []string{"rate: +Inf is not a finite number"}},
		{"NaN rate", func(c *Config) { c.Concurrency, c.Rate = 0, math.NaN() }, []string{"rate: NaN is not a finite number"}},
		{"tiny rate", func(c *Config) { c.Concurrency, c.Rate = 0, 1e-300 }, []string{"rate: 1e-300 requests/s: want 0.0001 to 1e+06"}},
		{"huge sweep rate", func(c *Config) { c.Concurrency, c.SweepRate = 0, []float64{1, 1e300} }, []string{"sweep_rate #2: 1e+300 requests/s"}},
		{"NaN burstiness", func(c *Config) { c.Concurrency, c.Rate, c.Burstiness = 0, 5, math.NaN() }, []string{"burstiness: NaN is not a finite number"}},
		{"tiny burstiness", func(c *Config) { c.Concurrency, c.Rate, c.Burstiness = 0, 5, 1e-300 }, []string{"burstiness: 1e-300: want 0.001 to 1000"}},
		{"NaN temperature", func(c *Config) { c.Extras.Temperature = new(math.NaN()) }, []string{"extras.temperature: NaN"}},
		{"infinite temperature", func(c *Config) { c.Extras.Temperature = new(math.Inf(1)) }, []string{"extras.temperature: +Inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mod(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
