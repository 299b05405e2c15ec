package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/joulemark/joulemark/internal/remotewrite"
)

// With an external Prometheus the demo's exporter and engine listen on
// random loopback ports that Prometheus cannot be told to scrape, so the
// demo does the scrape itself: every scrape interval it gathers their
// registries and remote-writes the samples, with the job and instance labels
// a scrape would add. The series are the ones a scrape gives, so the
// analysis reads them the same way.

// pushTarget is one registry pushed as if scraped.
type pushTarget struct {
	job, instance string
	g             prometheus.Gatherer
}

// pusher gathers its targets every interval and remote-writes the samples.
type pusher struct {
	w        *remotewrite.Writer
	targets  []pushTarget
	interval time.Duration
	log      *slog.Logger

	stop chan struct{}
	wg   sync.WaitGroup
}

func startPusher(w *remotewrite.Writer, interval time.Duration, log *slog.Logger, targets ...pushTarget) *pusher {
	p := &pusher{w: w, targets: targets, interval: interval, log: log, stop: make(chan struct{})}
	p.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			p.pushOnce(time.Now())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
	return p
}

// pushOnce gathers every target at ts.
func (p *pusher) pushOnce(ts time.Time) {
	ms := ts.UnixMilli()
	for _, t := range p.targets {
		mfs, err := t.g.Gather()
		if err != nil {
			p.log.Warn("gathering metrics for remote write", "job", t.job, "err", err)
		}
		extra := map[string]string{"job": t.job, "instance": t.instance}
		for _, mf := range mfs {
			for _, s := range familySamples(mf, extra, ms) {
				p.w.Append(s)
			}
		}
		p.w.Append(remotewrite.Sample{Labels: map[string]string{"__name__": "up", "job": t.job, "instance": t.instance}, Value: 1, TimestampMs: ms})
	}
}

// close takes a last sample of every target, then flushes the writer.
func (p *pusher) close(ctx context.Context) (remotewrite.Stats, error) {
	close(p.stop)
	p.wg.Wait()
	p.pushOnce(time.Now())
	return p.w.Close(ctx)
}

// familySamples flattens one metric family into samples the way the text
// exposition format names them (_bucket, _sum, _count, quantile).
func familySamples(mf *dto.MetricFamily, extra map[string]string, ms int64) []remotewrite.Sample {
	var out []remotewrite.Sample
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		base := make(map[string]string, len(m.GetLabel())+len(extra)+2)
		for k, v := range extra {
			base[k] = v
		}
		for _, lp := range m.GetLabel() {
			base[lp.GetName()] = lp.GetValue()
		}
		ts := ms
		if m.TimestampMs != nil {
			ts = m.GetTimestampMs()
		}
		add := func(suffix string, v float64, kv ...string) {
			l := make(map[string]string, len(base)+2)
			for k, x := range base {
				l[k] = x
			}
			l["__name__"] = name + suffix
			for i := 0; i+1 < len(kv); i += 2 {
				l[kv[i]] = kv[i+1]
			}
			out = append(out, remotewrite.Sample{Labels: l, Value: v, TimestampMs: ts})
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			add("", m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add("", m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			add("", m.GetUntyped().GetValue())
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				add("", q.GetValue(), "quantile", formatFloat(q.GetQuantile()))
			}
			add("_sum", s.GetSampleSum())
			add("_count", float64(s.GetSampleCount()))
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			inf := false
			for _, b := range h.GetBucket() {
				if math.IsInf(b.GetUpperBound(), 1) {
					inf = true
				}
				add("_bucket", float64(b.GetCumulativeCount()), "le", formatFloat(b.GetUpperBound()))
			}
			if !inf {
				add("_bucket", float64(h.GetSampleCount()), "le", "+Inf")
			}
			add("_sum", h.GetSampleSum())
			add("_count", float64(h.GetSampleCount()))
		}
	}
	return out
}

// formatFloat writes a bucket bound or quantile as the text format does.
func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// probeRemoteWrite pushes one sample synchronously, so a Prometheus without
// its remote-write receiver is found before the run starts.
func probeRemoteWrite(ctx context.Context, url, runID string) error {
	body, err := remotewrite.Encode([]remotewrite.Sample{{
		Labels:      map[string]string{"__name__": "joulemark_demo_info", "run_id": runID},
		Value:       1,
		TimestampMs: time.Now().UnixMilli(),
	}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("remote write %s: %w", url, err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("remote write %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("remote write %s answered %s: %s (start Prometheus with --web.enable-remote-write-receiver)",
			url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
