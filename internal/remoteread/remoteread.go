// Package remoteread reads raw samples from Prometheus through its
// remote-read API (/api/v1/read) with Prometheus' own client: it asks for
// STREAMED_XOR_CHUNKS (Prometheus ≥ 2.13, Thanos, Mimir), decodes the
// ChunkedReadResponse frames and their XOR chunks (tsdb/chunkenc) as they
// arrive, and takes SAMPLES from a server that only has those. No JSON.
package remoteread

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/joulemark/joulemark/internal/secretfile"
)

// How raw series are read (the --prometheus.read-api values).
const (
	// Auto reads through remote read and falls back to the query API when
	// the server does not offer remote read.
	Auto = "auto"
	// Remote reads through remote read only.
	Remote = "remote-read"
	// Query reads through the query API only (range selectors).
	Query = "query"
)

// ValidMode checks a read API value ("" is Auto).
func ValidMode(mode string) error {
	switch mode {
	case "", Auto, Remote, Query:
		return nil
	}
	return fmt.Errorf("read API %q: want auto, remote-read or query", mode)
}

// DefaultTimeout bounds one read when New is given none.
const DefaultTimeout = 10 * time.Minute

// selectorParser parses series selectors into matchers.
var selectorParser = parser.NewParser(parser.Options{})

// Reader reads raw samples from one Prometheus. It is safe for concurrent
// use.
type Reader struct {
	client remote.ReadClient
	url    string // redacted, for messages
	// secrets of the URL, scrubbed from the client's errors
	secrets secretfile.Secrets
}

// New returns a reader of the Prometheus at promURL (its base URL, as for
// the query API) with the HTTP client configuration hc; timeout bounds each
// read (DefaultTimeout when 0).
func New(promURL string, hc config.HTTPClientConfig, timeout time.Duration) (*Reader, error) {
	u, err := url.Parse(strings.TrimRight(promURL, "/") + "/api/v1/read")
	if err != nil {
		return nil, fmt.Errorf("remote read URL %q: %w", secretfile.RedactURL(promURL), errors.Unwrap(err))
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c, err := remote.NewReadClient("joulemark", &remote.ClientConfig{
		URL: &config.URL{URL: u}, Timeout: model.Duration(timeout), HTTPClientConfig: hc,
		ChunkedReadLimit: 1 << 30, // one frame; Prometheus sends frames of about 1 MB
	})
	if err != nil {
		return nil, fmt.Errorf("remote read client for %s: %w", secretfile.RedactURL(u.String()), err)
	}
	return &Reader{client: c, url: secretfile.RedactURL(u.String()), secrets: secretfile.SecretsOf(promURL)}, nil
}

// Read returns the float samples of sel (a PromQL series selector) with
// timestamps in (startMs, endMs], as a range selector [endMs−startMs]
// evaluated at endMs gives them (Prometheus 3): series with their labels
// (__name__ included), samples in time order, staleness markers dropped.
// Series without a sample there are left out.
func (r *Reader) Read(ctx context.Context, sel string, startMs, endMs int64) (model.Matrix, error) {
	var m model.Matrix
	err := r.Each(ctx, sel, startMs, endMs, func(metric model.Metric, pairs []model.SamplePair) error {
		m = append(m, &model.SampleStream{Metric: metric, Values: slices.Clone(pairs)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Each hands f the series Read returns, one at a time as they are decoded:
// each series' labels and samples. The samples lie in a buffer reused for
// the next series, so f copies what it keeps; no matrix is held. An error
// of f ends the read and is returned.
func (r *Reader) Each(ctx context.Context, sel string, startMs, endMs int64, f func(model.Metric, []model.SamplePair) error) error {
	ms, err := selectorParser.ParseMetricSelector(sel)
	if err != nil {
		return fmt.Errorf("remote read %s: %w", sel, err)
	}
	q, err := remote.ToQuery(startMs+1, endMs, ms, nil)
	if err != nil {
		return fmt.Errorf("remote read %s: %w", sel, err)
	}
	ss, err := r.client.Read(ctx, q, true)
	if err != nil {
		return fmt.Errorf("remote read %s from %s: %w", sel, r.url, r.secrets.Error(err))
	}
	var it chunkenc.Iterator
	var pairs []model.SamplePair
	for ss.Next() {
		s := ss.At()
		pairs = pairs[:0]
		var err error
		if cs, ok := s.(interface{ GetChunks() []prompb.Chunk }); ok {
			pairs, it, err = appendChunks(pairs, cs.GetChunks(), it, startMs, endMs)
		} else {
			pairs, it, err = appendSeries(pairs, s, it, startMs, endMs)
		}
		if err != nil {
			return fmt.Errorf("remote read %s: %w", sel, err)
		}
		if len(pairs) == 0 {
			continue
		}
		metric := make(model.Metric, s.Labels().Len())
		s.Labels().Range(func(l labels.Label) { metric[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		if err := f(metric, pairs); err != nil {
			return err
		}
	}
	if err := ss.Err(); err != nil {
		return fmt.Errorf("remote read %s from %s: %w", sel, r.url, r.secrets.Error(err))
	}
	return nil
}

// maxPresize is the most samples appendChunks makes room for ahead of
// decoding them (16 MiB of pairs).
const maxPresize = 1 << 20

// appendChunks appends the float samples of chunks in (startMs, endMs],
// staleness markers dropped, decoding each chunk in turn.
func appendChunks(pairs []model.SamplePair, chunks []prompb.Chunk, it chunkenc.Iterator, startMs, endMs int64) ([]model.SamplePair, chunkenc.Iterator, error) {
	// Room for the samples the chunks' headers announce, so that a long
	// series is appended without growing pairs a doubling at a time. A
	// header is the server's word: no more than an XOR chunk's bytes can
	// hold (2 bits a sample at best), nor than maxPresize in all.
	n := 0
	for _, c := range chunks {
		if len(c.Data) < 2 {
			// Every encoding opens with the sample count, which the
			// decoders read unchecked.
			return pairs, it, fmt.Errorf("a chunk of %d bytes, shorter than its 2-byte header", len(c.Data))
		}
		if c.MaxTimeMs > startMs && c.MinTimeMs <= endMs {
			if chk, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data); err == nil {
				n += min(chk.NumSamples(), 4*len(c.Data)+2)
			}
		}
	}
	pairs = slices.Grow(pairs, min(n, maxPresize))
	for _, c := range chunks {
		if c.MaxTimeMs <= startMs || c.MinTimeMs > endMs {
			continue
		}
		var err error
		if pairs, it, err = appendChunk(pairs, c, it, startMs, endMs); err != nil {
			return pairs, it, err
		}
	}
	return pairs, it, nil
}

// appendChunk is appendChunks of one chunk. Prometheus' decoders trust
// their bytes; a chunk they cannot decode (a panic) is an error here.
func appendChunk(pairs []model.SamplePair, c prompb.Chunk, it chunkenc.Iterator, startMs, endMs int64) (out []model.SamplePair, next chunkenc.Iterator, err error) {
	out = pairs
	defer func() {
		if r := recover(); r != nil {
			out, next, err = pairs, nil, fmt.Errorf("a malformed %s chunk of %d bytes: %v", c.Type, len(c.Data), r)
		}
	}()
	chk, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data)
	if err != nil {
		return pairs, it, err
	}
	it = chk.Iterator(it)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			continue // native histograms: not read
		}
		t, v := it.At()
		if t > endMs {
			break
		}
		if t <= startMs || value.IsStaleNaN(v) {
			continue
		}
		pairs = append(pairs, model.SamplePair{Timestamp: model.Time(t), Value: model.SampleValue(v)})
	}
	return pairs, it, it.Err()
}

// appendSeries is appendChunks of a series that does not expose its chunks.
func appendSeries(pairs []model.SamplePair, s storage.Series, it chunkenc.Iterator, startMs, endMs int64) ([]model.SamplePair, chunkenc.Iterator, error) {
	it = s.Iterator(it)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			continue
		}
		t, v := it.At()
		if t <= startMs || t > endMs || value.IsStaleNaN(v) {
			continue
		}
		pairs = append(pairs, model.SamplePair{Timestamp: model.Time(t), Value: model.SampleValue(v)})
	}
	return pairs, it, it.Err()
}
