package analyze

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// How analyze reads raw series (Config.ReadAPI, --prometheus.read-api).
const (
	// ReadAuto reads through remote read and falls back to the query API
	// when the server does not offer remote read.
	ReadAuto = "auto"
	// ReadRemote reads through remote read only.
	ReadRemote = "remote-read"
	// ReadQuery reads through the query API only (range selectors).
	ReadQuery = "query"
)

// selectorParser parses the loader's series selectors into matchers.
var selectorParser = parser.NewParser(parser.Options{})

// remoteReadTimeout bounds one remote read when Config.QueryTimeout is 0.
const remoteReadTimeout = 10 * time.Minute

// remoteReader reads raw samples through Prometheus' remote-read API
// (/api/v1/read) with Prometheus' own client: it asks for
// STREAMED_XOR_CHUNKS (Prometheus ≥ 2.13, Thanos, Mimir), decodes the
// frames and their XOR chunks (tsdb/chunkenc) as they arrive, and takes
// SAMPLES from a server that only has those. No JSON.
type remoteReader struct {
	client remote.ReadClient
	url    string
}

func newRemoteReader(promURL string, hc config.HTTPClientConfig, timeout time.Duration) (*remoteReader, error) {
	u, err := url.Parse(strings.TrimRight(promURL, "/") + "/api/v1/read")
	if err != nil {
		return nil, fmt.Errorf("remote read URL: %w", err)
	}
	if timeout <= 0 {
		timeout = remoteReadTimeout
	}
	c, err := remote.NewReadClient("joulemark-analyze", &remote.ClientConfig{
		URL: &config.URL{URL: u}, Timeout: model.Duration(timeout), HTTPClientConfig: hc,
		ChunkedReadLimit: 1 << 30, // one frame; Prometheus sends frames of about 1 MB
	})
	if err != nil {
		return nil, fmt.Errorf("remote read client for %s: %w", u, err)
	}
	return &remoteReader{client: c, url: u.String()}, nil
}

// read returns the float samples of sel (a PromQL series selector) with
// timestamps in (startMs, endMs], as a range selector [endMs−startMs]
// evaluated at endMs gives them (Prometheus 3): series with their labels
// (__name__ included), samples in time order, staleness markers dropped.
func (r *remoteReader) read(ctx context.Context, sel string, startMs, endMs int64) (model.Matrix, error) {
	ms, err := selectorParser.ParseMetricSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("remote read %s: %w", sel, err)
	}
	q, err := remote.ToQuery(startMs+1, endMs, ms, nil)
	if err != nil {
		return nil, fmt.Errorf("remote read %s: %w", sel, err)
	}
	ss, err := r.client.Read(ctx, q, true)
	if err != nil {
		return nil, fmt.Errorf("remote read %s from %s: %w", sel, r.url, err)
	}
	var m model.Matrix
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		var pairs []model.SamplePair
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue // native histograms: not in the metric contract
			}
			t, v := it.At()
			if t <= startMs || t > endMs || value.IsStaleNaN(v) {
				continue
			}
			pairs = append(pairs, model.SamplePair{Timestamp: model.Time(t), Value: model.SampleValue(v)})
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("remote read %s: %w", sel, err)
		}
		if len(pairs) == 0 {
			continue
		}
		metric := make(model.Metric, s.Labels().Len())
		s.Labels().Range(func(l labels.Label) { metric[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		m = append(m, &model.SampleStream{Metric: metric, Values: pairs})
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("remote read %s from %s: %w", sel, r.url, err)
	}
	return m, nil
}

// rangeRead is the samples of sel in window w: the range selector
// evaluated at the window's end through the query API, or the same
// samples through remote read.
func (l *loader) rangeRead(ctx context.Context, sel string, w window) (model.Matrix, error) {
	if l.rr == nil {
		return l.matrix(ctx, w.selector(sel), w.at())
	}
	return l.rr.read(ctx, sel, w.endMs-w.rngMs, w.endMs)
}

// chooseReadAPI settles how the raw series are read, before the first raw
// read: with ReadAuto, a remote read of the run's phase starts over the
// span must succeed, else the query API is used (a server without remote
// read: VictoriaMetrics, a proxy that only passes the query API).
func (l *loader) chooseReadAPI(ctx context.Context, mode string, sp rawSpan) error {
	switch mode {
	case ReadQuery:
		l.rr = nil
		return nil
	case ReadRemote:
		return nil
	}
	w := sp.windows[len(sp.windows)-1]
	_, err := l.rr.read(ctx, fmt.Sprintf("%s{%s}", mPhaseStart, l.runSel()), w.endMs-w.rngMs, w.endMs)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		l.readFallback = err.Error()
		l.rr = nil
	}
	return nil
}

// validReadAPI checks a Config.ReadAPI value ("" is ReadAuto).
func validReadAPI(mode string) error {
	switch mode {
	case "", ReadAuto, ReadRemote, ReadQuery:
		return nil
	}
	return errors.New("read API " + fmt.Sprintf("%q", mode) + ": want auto, remote-read or query")
}
