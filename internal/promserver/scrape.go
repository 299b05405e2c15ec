package promserver

import (
	"fmt"
	"net/url"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/scrape"
	"go.yaml.in/yaml/v3"
)

// promConfig is the part of prometheus.yml the embedded server uses; it is
// rendered to YAML and loaded with config.Load so that every default and
// check of a real Prometheus applies.
type promConfig struct {
	Global struct {
		ScrapeInterval     string `yaml:"scrape_interval"`
		EvaluationInterval string `yaml:"evaluation_interval"`
	} `yaml:"global"`
	ScrapeConfigs []scrapeConfig `yaml:"scrape_configs,omitempty"`
}

type scrapeConfig struct {
	JobName        string         `yaml:"job_name"`
	ScrapeInterval string         `yaml:"scrape_interval"`
	ScrapeTimeout  string         `yaml:"scrape_timeout"`
	MetricsPath    string         `yaml:"metrics_path"`
	Scheme         string         `yaml:"scheme"`
	Params         url.Values     `yaml:"params,omitempty"`
	StaticConfigs  []staticConfig `yaml:"static_configs"`
}

type staticConfig struct {
	Targets []string `yaml:"targets"`
}

// buildConfig is the Prometheus configuration equivalent to opts; /api/v1/status/config shows it.
func buildConfig(opts Options, targets []scrapeTarget) (*config.Config, error) {
	var pc promConfig
	pc.Global.ScrapeInterval = model.Duration(DefaultScrapeInterval).String()
	pc.Global.EvaluationInterval = model.Duration(opts.EvaluationInterval).String()
	for _, t := range targets {
		path := t.u.EscapedPath()
		if path == "" {
			path = "/metrics"
		}
		iv := model.Duration(t.Interval).String()
		sc := scrapeConfig{
			JobName: t.Job, ScrapeInterval: iv, ScrapeTimeout: iv,
			MetricsPath: path, Scheme: t.u.Scheme,
			StaticConfigs: []staticConfig{{Targets: []string{t.u.Host}}},
		}
		if q := t.u.Query(); len(q) > 0 {
			sc.Params = q
		}
		pc.ScrapeConfigs = append(pc.ScrapeConfigs, sc)
	}
	b, err := yaml.Marshal(pc)
	if err != nil {
		return nil, fmt.Errorf("rendering the configuration: %w", err)
	}
	cfg, err := config.Load(string(b), nil)
	if err != nil {
		return nil, fmt.Errorf("scrape configuration: %w", err)
	}
	cfg.RuleFiles = append(append([]string(nil), opts.RuleFiles...), ruleSourceNames(opts.RuleSources)...)
	return cfg, nil
}

func ruleSourceNames(srcs []RuleSource) []string {
	var names []string
	for _, s := range srcs {
		names = append(names, s.Name)
	}
	return names
}

// startScrape runs Prometheus' scrape manager on the static targets: it
// appends with the scrape timestamp, writes up, scrape_duration_seconds and
// the other synthetic series, and staleness markers when a series vanishes.
func (s *Server) startScrape(cfg *config.Config, targets []scrapeTarget) error {
	m, err := scrape.NewManager(&scrape.Options{
		DiscoveryReloadOnStartup: true,
		// Take a last scrape on Close, so the end of a run is in the TSDB.
		ScrapeOnShutdown: true,
	}, s.log.With("component", "scrape manager"), nil, nil, s.db, s.reg)
	if err != nil {
		return fmt.Errorf("embedded prometheus: scrape manager: %w", err)
	}
	if err := m.ApplyConfig(cfg); err != nil {
		return fmt.Errorf("embedded prometheus: scrape configuration: %w", err)
	}
	tsets := make(chan map[string][]*targetgroup.Group, 1)
	groups := map[string][]*targetgroup.Group{}
	for _, t := range targets {
		groups[t.Job] = []*targetgroup.Group{{
			Source:  t.Job,
			Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(t.u.Host)}},
		}}
	}
	tsets <- groups
	s.scrape = m
	s.scrapeDone = make(chan struct{})
	go func() {
		defer close(s.scrapeDone)
		if err := m.Run(tsets); err != nil {
			s.log.Error("embedded prometheus: scrape manager stopped", "err", err)
		}
	}()
	return nil
}
