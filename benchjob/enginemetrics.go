package benchjob

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
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
	// Invalid names the metrics left out of this scrape because the engine
	// answered a NaN or infinite sample for them.
	Invalid []string `json:"invalid,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// parseEngineMetrics reads a Prometheus text exposition and keeps the
// cross-check metrics. A metric with a NaN or infinite sample is left out
// (its sum would be one) and named in invalid, sorted.
func parseEngineMetrics(r io.Reader) (out map[string]float64, invalid []string, err error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, nil, err
	}
	out = map[string]float64{}
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
		if v := out[name]; math.IsNaN(v) || math.IsInf(v, 0) {
			delete(out, name)
			invalid = append(invalid, name)
		}
	}
	slices.Sort(invalid)
	return out, invalid, nil
}

// engineMetricsInvalid counts the samples left out of engine_metrics.jsonl
// as non-finite, by metric; the first of each metric is a warning and
// flags the run.
type engineMetricsInvalid map[string]int

// note counts the scrape's invalid metrics.
func (c engineMetricsInvalid) note(r *runner, invalid []string) {
	for _, name := range invalid {
		if c[name] == 0 {
			r.log.Warn("engine metrics: a NaN or infinite sample left out of "+runarchive.EngineMetricsFile+" (the engine view of the run is incomplete)", "metric", name)
			r.flag(contract.FlagEngineMetricsInvalid)
		}
		c[name]++
	}
}

// report logs the counts at the end of the scrape.
func (c engineMetricsInvalid) report(r *runner) {
	for _, name := range slices.Sorted(maps.Keys(c)) {
		r.log.Warn("engine metrics: scrapes left out as NaN or infinite", "metric", name, "scrapes", c[name])
	}
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
	invalid, writeErr := engineMetricsInvalid{}, error(nil)
	defer invalid.report(r)
	tickUntil(stop, iv, func(now time.Time) {
		line := EngineMetricsLine{Time: unixSeconds(now), Phase: r.rec.currentPhase()}
		m, bad, err := scrapeOnce(do, u, timeout)
		if err != nil {
			line.Error = err.Error()
		} else {
			line.Metrics, line.Invalid = m, bad
			invalid.note(r, bad)
		}
		err = enc.Encode(&line)
		if err == nil {
			err = w.Flush()
		}
		if err != nil && writeErr == nil {
			writeErr = err
			r.log.Warn("engine metrics: writing "+runarchive.EngineMetricsFile, "err", err)
		}
	})
}

// scrapeOnce GETs u and parses it (parseEngineMetrics).
func scrapeOnce(do func(*http.Request) (*http.Response, error), u string, timeout time.Duration) (map[string]float64, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: status %d", secretfile.RedactURL(u), resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/plain") && !strings.HasPrefix(ct, "application/openmetrics-text") {
		return nil, nil, fmt.Errorf("GET %s: content type %q", secretfile.RedactURL(u), ct)
	}
	return parseEngineMetrics(io.LimitReader(resp.Body, 32<<20))
}
