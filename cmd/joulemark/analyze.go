package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/analyze"
)

// PromClientFlags reach a protected Prometheus; secrets come from files.
type PromClientFlags struct {
	BearerTokenFile   string            `name:"prometheus.bearer-token-file" type:"existingfile" help:"File holding a bearer token for Prometheus."`
	BasicUser         string            `name:"prometheus.basic-user" help:"Basic-auth user for Prometheus."`
	BasicPasswordFile string            `name:"prometheus.basic-password-file" type:"existingfile" help:"File holding the basic-auth password."`
	TLSCA             string            `name:"prometheus.tls-ca" type:"existingfile" help:"CA certificate file to verify Prometheus."`
	TLSCert           string            `name:"prometheus.tls-cert" type:"existingfile" help:"Client certificate file."`
	TLSKey            string            `name:"prometheus.tls-key" type:"existingfile" help:"Client key file."`
	TLSServerName     string            `name:"prometheus.tls-server-name" help:"Server name to verify the certificate against."`
	Headers           map[string]string `name:"prometheus.header" help:"Extra HTTP header K=V sent with every query (repeatable), e.g. X-Scope-OrgID=tenant."`
}

func (f PromClientFlags) auth() analyze.ClientAuth {
	return analyze.ClientAuth{BearerTokenFile: f.BearerTokenFile, BasicUser: f.BasicUser, BasicPasswordFile: f.BasicPasswordFile,
		TLSCA: f.TLSCA, TLSCert: f.TLSCert, TLSKey: f.TLSKey, TLSServerName: f.TLSServerName, Headers: f.Headers}
}

// AnalyzeCmd derives a run's report from Prometheus.
type AnalyzeCmd struct {
	PrometheusURL string `name:"prometheus-url" required:"" help:"Prometheus base URL (the HTTP query API), e.g. http://localhost:9090."`
	PromClientFlags
	RunID          string `name:"run-id" required:"" help:"Run to analyze."`
	Lookback       string `default:"7d" help:"How far back from now to look for the run (Prometheus duration)."`
	Out            string `required:"" placeholder:"DIR" help:"Directory for report.json, report.md and report.html; must not exist or be empty (an earlier report is never overwritten)."`
	Format         string `default:"table" enum:"table,json" help:"What to print on stdout (${enum})."`
	Scenario       string `help:"Scenario name copied into the report (compare groups by it)."`
	Archive        string `type:"existingdir" placeholder:"DIR" help:"The bench job's run archive (runs/<run_id>, holding requests.jsonl): the report then counts empty, repeated and short outputs (output_sanity)."`
	RunsDir        string `name:"runs-dir" type:"path" placeholder:"DIR" help:"Runs directory searched for the run's archive, DIR/<run_id> (as --archive, when it is there)."`
	EngineSelector string `name:"engine.selector" placeholder:"MATCHERS" help:"PromQL label matchers picking the run's engine series for the server view, e.g. job=\"vllm\",instance=\"node1:8000\" (default: model_name of the run identity)."`

	SLOTTFT   time.Duration `name:"slo-ttft" default:"500ms" help:"TTFT SLO for goodput (0 disables)."`
	SLOTPOT   time.Duration `name:"slo-tpot" default:"35ms" help:"TPOT SLO for goodput (0 disables)."`
	SSWindow  int           `name:"ss-window" default:"100" help:"Steady state: requests per window."`
	SSWindows int           `name:"ss-windows" default:"3" help:"Steady state: consecutive non-overlapping windows."`
	SSCV      float64       `name:"ss-cv" default:"0.03" help:"Steady state: CV threshold of every window."`

	MaxErrorRate    float64       `name:"max-error-rate" default:"0.05" help:"Formal error rate above which the run is invalid."`
	MinCoverage     float64       `name:"min-coverage" default:"0.95" help:"Sample coverage below which the run is invalid."`
	EnergyTolerance float64       `name:"energy-tolerance" default:"0.01" help:"Relative disagreement between counter and exporter stage energy above which the run is invalid."`
	MaxBadOutput    float64       `name:"max-bad-output-ratio" default:"0.05" help:"With --archive: share of empty, repeated or short outputs above which the run is flagged outputs_suspect (a warning)."`
	MinQuality      float64       `name:"min-quality" default:"0.95" help:"With quality verdicts in the archive (--workload correctness, workload.quality_file): pass rate under which the run is flagged quality_low and excluded."`
	QueryTimeout    time.Duration `name:"query-timeout" default:"2m" help:"Timeout of each Prometheus query."`
	ReadAPI         string        `name:"prometheus.read-api" default:"auto" enum:"auto,remote-read,query" help:"How raw series are read: remote read (STREAMED_XOR_CHUNKS), falling back to the query API where the server lacks it (auto), or only one of them (${enum})."`
}

// Run analyzes the run and writes the report.
func (c *AnalyzeCmd) Run(g *Globals) error {
	lb, err := model.ParseDuration(c.Lookback)
	if err != nil {
		return fmt.Errorf("--lookback %q: %w", c.Lookback, err)
	}
	hc, err := c.auth().HTTPConfig()
	if err != nil {
		return err
	}
	p := analyze.DefaultParams()
	p.SLOTTFT, p.SLOTPOT = c.SLOTTFT, c.SLOTPOT
	p.SSWindow, p.SSWindows, p.SSCV = c.SSWindow, c.SSWindows, c.SSCV
	p.MaxErrorRate, p.MinCoverage, p.EnergyTolerance = c.MaxErrorRate, c.MinCoverage, c.EnergyTolerance
	p.MaxBadOutputRatio = c.MaxBadOutput
	p.MinQuality = c.MinQuality
	cfg := analyze.Config{
		PrometheusURL: c.PrometheusURL, HTTP: hc, RunID: c.RunID, Params: p,
		Lookback: time.Duration(lb), QueryTimeout: c.QueryTimeout, OutDir: c.Out, Scenario: c.Scenario,
		Archive: c.Archive, RunsDir: c.RunsDir, EngineSelector: c.EngineSelector, ReadAPI: c.ReadAPI,
	}
	// Validated once, by analyze.Run, before any query.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := analyze.Run(ctx, cfg)
	if err != nil {
		return err
	}
	g.Logger().Info("report written", "run_id", r.RunID, "dir", c.Out, "valid", r.Valid, "flags", len(r.Flags))
	if c.Format == "json" {
		js, err := analyze.MarshalReport(r)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(js)
		return err
	}
	return analyze.WriteSummary(os.Stdout, r)
}
