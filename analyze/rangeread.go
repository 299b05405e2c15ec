package analyze

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Defaults of the chunked reader: a long run's raw series are read as range
// selectors over consecutive windows of this length, this many at a time.
// Remote read takes longer windows: a server cuts (decodes and re-encodes)
// every chunk that crosses a window's edge, and sparse series (one per
// slot at high concurrency) have chunks a quarter of an hour long, so
// half-hour windows made it cut about half of them.
const (
	defaultChunk       = 30 * time.Minute
	defaultRemoteChunk = time.Hour
	defaultParallelism = 4
)

// window is one chunk of a raw read: the range selector [rng] evaluated at
// end (both whole milliseconds). Prometheus 3 returns the samples in
// (end−rng, end], Prometheus 2 in [end−rng, end]; every window but the first
// drops samples at or before its start (after), so consecutive windows
// partition the span under both and no sample is read twice or lost. The
// first window keeps what the server returns, as one selector over the whole
// span would.
type window struct {
	endMs, rngMs int64
	first        bool
}

// keep reports whether a sample at ts belongs to the window.
func (w window) keep(ts model.Time) bool { return w.first || int64(ts) > w.endMs-w.rngMs }

// selector renders sel as a range selector over the window.
func (w window) selector(sel string) string {
	return sel + "[" + promDuration(time.Duration(w.rngMs)*time.Millisecond) + "]"
}

// splitSpan cuts the span of rngMs milliseconds ending at endMs into windows
// of at most chunkMs, in time order; the last ends at endMs.
func splitSpan(endMs, rngMs, chunkMs int64) []window {
	rngMs, chunkMs = max(rngMs, 1), max(chunkMs, 1)
	start := endMs - rngMs
	var ws []window
	for from := start; from < endMs; from += chunkMs {
		to := min(from+chunkMs, endMs)
		ws = append(ws, window{endMs: to, rngMs: to - from, first: from == start})
	}
	return ws
}

// inOrder runs fetch(0..n−1) with at most par calls in flight and hands each
// result to merge in index order, on the calling goroutine. A result waits
// for its merge before another fetch starts, so at most par results are held
// at once. The first error (of a fetch or a merge) cancels the rest and is
// returned; inOrder returns only after every fetch has returned.
func inOrder[T any](ctx context.Context, n, par int, fetch func(ctx context.Context, i int) (T, error), merge func(i int, v T) error) error {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, max(par, 1))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := fetch(ctx, i)
				results[i] <- result{v, err}
			}()
		}
	}()
	for i := range n {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
		if err := merge(i, r.v); err != nil {
			return err
		}
		<-slots
	}
	return nil
}

// rawSeries is one series read over all windows: its labels and samples.
type rawSeries struct {
	metric  model.Metric
	samples []Sample
}

// readSeries reads sel over the windows and returns each series' samples
// merged across windows, series in Prometheus' own order (sorted by labels,
// as Prometheus 3 returns a matrix). Each window's matrix is converted to
// compact samples and dropped as soon as it is read.
func (l *loader) readSeries(ctx context.Context, sel string, ws []window) ([]rawSeries, error) {
	type part struct {
		metric  model.Metric
		samples []Sample
	}
	// Each series' samples, window by window: copied once, at the end.
	type acc struct {
		metric model.Metric
		parts  [][]Sample
		n      int
	}
	series := map[model.Fingerprint]*acc{}
	err := inOrder(ctx, len(ws), l.par, func(ctx context.Context, i int) ([]part, error) {
		// Each series' samples converted as it arrives: the window's
		// samples are never held as a matrix too.
		var parts []part
		err := l.rangeEach(ctx, sel, ws[i], func(metric model.Metric, values []model.SamplePair, _ bool) {
			s := make([]Sample, 0, len(values))
			for _, p := range values {
				switch v := float64(p.Value); {
				case !ws[i].keep(p.Timestamp):
				case math.IsNaN(v) || math.IsInf(v, 0):
					if m := queryMetric(sel); strings.HasPrefix(m, "joulemark_") {
						l.invalid.note(m) // an engine's own NaN is its business
					}
				default:
					s = append(s, Sample{T: float64(p.Timestamp) / 1000, V: v})
				}
			}
			parts = append(parts, part{metric, s})
		})
		if err != nil {
			return nil, err
		}
		return parts, nil
	}, func(_ int, parts []part) error {
		for _, p := range parts {
			if len(p.samples) == 0 {
				continue
			}
			fp := p.metric.Fingerprint()
			a, ok := series[fp]
			if !ok {
				a = &acc{metric: p.metric}
				series[fp] = a
			}
			if k := len(a.parts); k > 0 {
				last := a.parts[k-1]
				if p.samples[0].T <= last[len(last)-1].T {
					return fmt.Errorf("query %s: samples of %s out of time order across windows", sel, p.metric)
				}
			}
			a.parts = append(a.parts, p.samples)
			a.n += len(p.samples)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]rawSeries, 0, len(series))
	for _, a := range series {
		s := a.parts[0] // a series within one window: no copy
		if len(a.parts) > 1 {
			s = make([]Sample, 0, a.n)
			for k, p := range a.parts {
				s = append(s, p...)
				a.parts[k] = nil
			}
		}
		out = append(out, rawSeries{metric: a.metric, samples: s})
	}
	sortByLabels(out, func(s rawSeries) model.Metric { return s.metric })
	return out, nil
}

// sortByLabels sorts items by their labels as Prometheus sorts a matrix
// (labels.Compare), so the order does not depend on the windows.
func sortByLabels[T any](items []T, metric func(T) model.Metric) {
	keys := make([]labels.Labels, len(items))
	idx := make([]int, len(items))
	for i, it := range items {
		b := labels.NewScratchBuilder(len(metric(it)))
		for k, v := range metric(it) {
			b.Add(string(k), string(v))
		}
		b.Sort()
		keys[i], idx[i] = b.Labels(), i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return labels.Compare(keys[a], keys[b]) })
	sorted := make([]T, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
}
