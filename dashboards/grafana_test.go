package dashboards

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/benchjob"
)

// documentedInterval reads the Grafana data source's scrape interval
// (timeInterval) that deploy/grafana provisions and docs/deploy.md names.
func documentedInterval(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/provisioning/datasources/joulemark.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Datasources []struct {
			JSONData struct {
				TimeInterval string `yaml:"timeInterval"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil || len(f.Datasources) != 1 {
		t.Fatalf("datasource provisioning: %v (%d data sources)", err, len(f.Datasources))
	}
	d, err := time.ParseDuration(f.Datasources[0].JSONData.TimeInterval)
	if err != nil {
		t.Fatalf("datasource timeInterval: %v", err)
	}
	return d
}

// TestSlowestProducer: SlowestProducer is at least the bench job's default
// aggregate interval and every engine scrape interval of deploy/prometheus.
func TestSlowestProducer(t *testing.T) {
	if agg := benchjob.Defaults().RemoteWrite.AggregateInterval; agg > SlowestProducer {
		t.Errorf("bench aggregates every %v, SlowestProducer is %v", agg, SlowestProducer)
	}
	b, err := os.ReadFile("../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName        string `yaml:"job_name"`
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "inference-engine" {
			continue
		}
		found = true
		iv := sc.ScrapeInterval
		if iv == "" {
			iv = cfg.Global.ScrapeInterval
		}
		d, err := time.ParseDuration(iv)
		if err != nil || d > SlowestProducer {
			t.Errorf("engines scraped every %q (%v), SlowestProducer is %v", iv, err, SlowestProducer)
		}
	}
	if !found {
		t.Error("deploy/prometheus/prometheus.yml has no inference-engine job")
	}
}

// TestRateWindowsFitProducers: at the documented data source interval and
// the shortest time range (where $__rate_interval is smallest), every rate
// over $__rate_interval of a bench aggregate or an engine series spans four
// of its samples.
func TestRateWindowsFitProducers(t *testing.T) {
	ts, err := Targets()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	v := View{From: now.Add(-time.Minute), To: now, MaxDataPoints: 1280, DataSourceInterval: documentedInterval(t)}
	var slow int
	for _, tg := range ts {
		if !strings.Contains(tg.Expr, "$__rate_interval") {
			continue
		}
		isSlow := false
		for _, p := range slowPrefixes {
			isSlow = isSlow || strings.Contains(tg.Expr, p)
		}
		if !isSlow {
			continue
		}
		slow++
		if _, rate := v.Intervals(tg.MinStep); rate < 4*SlowestProducer {
			t.Errorf("%s: %s: $__rate_interval is %v at a %v data source interval, under 4 × %v\n  %s", tg.Dashboard, tg.Where, rate, v.DataSourceInterval, SlowestProducer, tg.Expr)
		}
	}
	if slow < 5 {
		t.Errorf("only %d rate queries of slow series found", slow)
	}
}

// TestIntervals checks the Grafana interval arithmetic on known cases.
func TestIntervals(t *testing.T) {
	now := time.Unix(1e9, 0)
	for _, tc := range []struct {
		rng, ds, step, interval, rate time.Duration
	}{
		{time.Minute, time.Second, 0, time.Second, 4 * time.Second},
		{time.Minute, time.Second, 5 * time.Second, 5 * time.Second, 20 * time.Second},
		{24 * time.Hour, time.Second, 5 * time.Second, 68 * time.Second, 73 * time.Second},
		{time.Minute, 15 * time.Second, 0, 15 * time.Second, time.Minute},
	} {
		v := View{From: now.Add(-tc.rng), To: now, MaxDataPoints: 1280, DataSourceInterval: tc.ds}
		iv, rate := v.Intervals(tc.step)
		if iv != tc.interval || rate != tc.rate {
			t.Errorf("range %v, data source %v, min step %v: interval %v rate %v, want %v and %v", tc.rng, tc.ds, tc.step, iv, rate, tc.interval, tc.rate)
		}
	}
}
