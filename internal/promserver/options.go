package promserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"
)

// Defaults of Options.
const (
	DefaultListenAddress      = "127.0.0.1:0"
	DefaultScrapeInterval     = time.Second
	DefaultEvaluationInterval = 5 * time.Second
	// DefaultOutOfOrderWindow is how far behind the newest sample a sample may
	// still be written. A whole day: per-request samples carry the request's end
	// time, raw samples are buffered and retried by the remote writer, and
	// fixtures or archived runs may be pushed after the fact. It costs nothing
	// while no sample arrives out of order.
	DefaultOutOfOrderWindow = 24 * time.Hour
	DefaultLookbackDelta    = 5 * time.Minute
	DefaultQueryTimeout     = 2 * time.Minute
	DefaultMaxSamples       = 50_000_000
)

// Target is one /metrics endpoint to scrape.
type Target struct {
	// Job is the job label (and the scrape pool name); unique among targets.
	Job string
	// URL is the full address of the metrics page, e.g. http://127.0.0.1:9400/metrics.
	URL string
	// Interval between scrapes (default DefaultScrapeInterval). The scrape
	// timeout is the interval.
	Interval time.Duration
}

// RuleSource is a rule file given as bytes (for rules embedded in the binary).
type RuleSource struct {
	// Name identifies the file in errors and in /api/v1/rules; unique.
	Name string
	// YAML is the content of a Prometheus rule file.
	YAML []byte
}

// Options configure an embedded Prometheus.
type Options struct {
	// Dir holds the TSDB (required); created if missing, reopened with its
	// data if it exists.
	Dir string
	// ListenAddress of the HTTP API (default DefaultListenAddress).
	ListenAddress string
	// ScrapeTargets are scraped from Start until Close (one last scrape is
	// taken on Close).
	ScrapeTargets []Target
	// RuleFiles are paths of Prometheus rule files; RuleSources are rule files
	// given as bytes. Both are validated by Start.
	RuleFiles   []string
	RuleSources []RuleSource
	// EvaluationInterval of rule groups without their own interval (default
	// DefaultEvaluationInterval).
	EvaluationInterval time.Duration
	// OutOfOrderWindow accepts samples up to this far behind the newest one
	// (default DefaultOutOfOrderWindow).
	OutOfOrderWindow time.Duration
	// Retention deletes blocks older than this; 0 keeps everything (a run
	// directory holds one run).
	Retention time.Duration
	// LookbackDelta of PromQL (default DefaultLookbackDelta).
	LookbackDelta time.Duration
	// QueryTimeout bounds one query (default DefaultQueryTimeout).
	QueryTimeout time.Duration
	// MaxSamples bounds the samples one query may load (default DefaultMaxSamples).
	MaxSamples int
	// DisableRemoteWrite turns the /api/v1/write receiver off.
	DisableRemoteWrite bool
	// ReadOnly opens Dir with tsdb.OpenDBReadOnly and writes nothing there
	// (the replayed head lives in a sandbox under the system temp
	// directory); Dir must hold a TSDB. It implies DisableRemoteWrite and
	// takes no scrape targets or rules.
	ReadOnly bool
	// Logger receives the server's logs (default: discarded).
	Logger *slog.Logger
}

// scrapeTarget is a validated Target.
type scrapeTarget struct {
	Target
	u *url.URL
}

// validate checks o and fills in the defaults; it returns the parsed targets.
func (o *Options) validate() ([]scrapeTarget, error) {
	errs := o.validateSettings()
	targets, terrs := o.validateTargets()
	errs = append(errs, terrs...)
	errs = append(errs, o.validateRules()...)
	if o.ReadOnly {
		if !o.DisableRemoteWrite {
			errs = append(errs, errors.New("a read-only TSDB takes no remote write (set DisableRemoteWrite)"))
		}
		if len(o.ScrapeTargets) > 0 || len(o.RuleFiles) > 0 || len(o.RuleSources) > 0 {
			errs = append(errs, errors.New("a read-only TSDB takes no scrape targets or rules"))
		}
	}

	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("embedded prometheus: invalid options: %w", err)
	}
	return targets, nil
}

// validateSettings checks the directory, address, durations and limits and
// fills in their defaults.
func (o *Options) validateSettings() []error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("data directory (Dir) is required"))
	}
	if o.ListenAddress == "" {
		o.ListenAddress = DefaultListenAddress
	}
	if _, _, err := net.SplitHostPort(o.ListenAddress); err != nil {
		errs = append(errs, fmt.Errorf("listen address %q: %w", o.ListenAddress, err))
	}
	durations := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"evaluation interval", &o.EvaluationInterval, DefaultEvaluationInterval},
		{"out-of-order window", &o.OutOfOrderWindow, DefaultOutOfOrderWindow},
		{"retention", &o.Retention, 0},
		{"lookback delta", &o.LookbackDelta, DefaultLookbackDelta},
		{"query timeout", &o.QueryTimeout, DefaultQueryTimeout},
	}
	for _, d := range durations {
		switch {
		case *d.d < 0:
			errs = append(errs, fmt.Errorf("%s %s: must not be negative", d.name, *d.d))
		case *d.d == 0:
			*d.d = d.def
		}
	}
	if o.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("max samples %d: must not be negative", o.MaxSamples))
	} else if o.MaxSamples == 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return errs
}

// validateTargets checks the scrape targets and parses their URLs.
func (o *Options) validateTargets() ([]scrapeTarget, []error) {
	var errs []error
	var targets []scrapeTarget
	jobs := map[string]bool{}
	for i, t := range o.ScrapeTargets {
		where := fmt.Sprintf("scrape target %d (job %q)", i, t.Job)
		if t.Job == "" {
			errs = append(errs, fmt.Errorf("%s: empty job", where))
		} else if jobs[t.Job] {
			errs = append(errs, fmt.Errorf("%s: duplicate job", where))
		}
		jobs[t.Job] = true
		if t.Interval < 0 {
			errs = append(errs, fmt.Errorf("%s: interval %s must not be negative", where, t.Interval))
		} else if t.Interval == 0 {
			t.Interval = DefaultScrapeInterval
		}
		if t.Interval%time.Millisecond != 0 {
			errs = append(errs, fmt.Errorf("%s: interval %s must be a whole number of milliseconds", where, t.Interval))
		}
		u, err := url.Parse(t.URL)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: URL: %w", where, err))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("%s: URL %q: scheme must be http or https", where, t.URL))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("%s: URL %q: no host", where, t.URL))
		case u.User != nil:
			errs = append(errs, fmt.Errorf("%s: URL: credentials in the URL are not supported", where))
		case u.Fragment != "":
			errs = append(errs, fmt.Errorf("%s: URL %q: fragment not allowed", where, t.URL))
		default:
			targets = append(targets, scrapeTarget{Target: t, u: u})
		}
	}
	return targets, errs
}

// validateRules checks that rule sources and files are named once each.
func (o *Options) validateRules() []error {
	var errs []error
	names := map[string]bool{}
	for i, src := range o.RuleSources {
		if src.Name == "" {
			errs = append(errs, fmt.Errorf("rule source %d: empty name", i))
		} else if names[src.Name] {
			errs = append(errs, fmt.Errorf("rule source %d: duplicate name %q", i, src.Name))
		}
		names[src.Name] = true
	}
	for _, f := range o.RuleFiles {
		if names[f] {
			errs = append(errs, fmt.Errorf("rule file %q: given twice", f))
		}
		names[f] = true
	}
	return errs
}
