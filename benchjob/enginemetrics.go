package benchjob

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// engineMetricNames are the engine's own gauges and counters recorded with
// the run as a cross-check: every name of analyze's server roles and the
// prompt token counters, vLLM's and SGLang's (internal/contract).
var engineMetricNames = func() map[string]bool {
	out := map[string]bool{}
	for _, r := range append(slices.Clone(contract.ServerRoles), contract.RolePromptTokens) {
		for _, n := range contract.EngineNames(r) {
			out[n] = true
		}
	}
	return out
}()

// EngineMetricsLine is one line of engine_metrics.jsonl: the engine's
// cross-check metrics at one scrape, each summed over its label sets.
type EngineMetricsLine struct {
	Time    float64            `json:"time"`
	Phase   string             `json:"phase"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Error   string             `json:"error,omitempty"`
}

// parseEngineMetrics reads a Prometheus text exposition and keeps the
// cross-check metrics.
func parseEngineMetrics(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range fams {
		if !engineMetricNames[name] {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Gauge != nil:
				out[name] += m.GetGauge().GetValue()
			case m.Counter != nil:
				out[name] += m.GetCounter().GetValue()
			case m.Untyped != nil:
				out[name] += m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// scrapeEngineMetrics scrapes the engine's /metrics every interval into
// engine_metrics.jsonl until stop closes. Failures are recorded as lines
// (the engine may not be up yet).
func (r *runner) scrapeEngineMetrics(stop <-chan struct{}) {
	// The engine's own /metrics goes through the engine client (its TLS,
	// proxy and credentials); another URL gets none of them.
	u, do := r.cfg.Engine.MetricsURL, http.DefaultClient.Do
	if u == "" {
		u, do = r.client.RootURL()+"/metrics", r.client.Do
	}
	f, err := r.rec.arch.CreateFile(runarchive.EngineMetricsFile)
	if err != nil {
		r.log.Warn("engine metrics", "err", err)
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	enc := json.NewEncoder(w)
	iv := r.cfg.Engine.MetricsInterval
	timeout := min(iv, 10*time.Second)
	tickUntil(stop, iv, func(now time.Time) {
		line := EngineMetricsLine{Time: unixSeconds(now), Phase: r.rec.currentPhase()}
		m, err := scrapeOnce(do, u, timeout)
		if err != nil {
			line.Error = err.Error()
		} else {
			line.Metrics = m
		}
		_ = enc.Encode(&line)
		_ = w.Flush()
	})
}

func scrapeOnce(do func(*http.Request) (*http.Response, error), u string, timeout time.Duration) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", secretfile.RedactURL(u), resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/plain") && !strings.HasPrefix(ct, "application/openmetrics-text") {
		return nil, fmt.Errorf("GET %s: content type %q", secretfile.RedactURL(u), ct)
	}
	return parseEngineMetrics(io.LimitReader(resp.Body, 32<<20))
}
