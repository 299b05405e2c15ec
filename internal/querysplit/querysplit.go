// Package querysplit reads raw samples through the Prometheus query API
// (a range selector evaluated at one instant) without exceeding a
// server's per-query sample limit (Prometheus' and Mimir's
// --query.max-samples, 50M by default; VictoriaMetrics'
// -search.maxSamplesPerQuery). A census query counts the samples of the
// span in time slots first; a span over the limit is read as consecutive
// sub-spans of whole slots, each under it, and the parts are merged into
// the matrix one query would have returned.
package querysplit

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// DefaultMaxSamples is Prometheus' own --query.max-samples default.
const DefaultMaxSamples = 50_000_000

// censusSlots is how many time slots a census counts a span in: the
// granularity of a split. A census loads (series × (slots+1)) samples, plus
// one series' samples in one slot, at once in Prometheus: far below the
// limit while the series are fewer than a thirty-third of it.
const censusSlots = 16

// Reader reads range selectors through API, split so that no query loads
// more than MaxSamples samples. It is safe for concurrent use.
type Reader struct {
	API v1.API
	// MaxSamples is the server's per-query sample limit; 0 or less: no
	// census, one query per read.
	MaxSamples int64
	// Timeout bounds each query (none when 0).
	Timeout time.Duration
}

// Read returns the samples of the series selector sel in (startMs, endMs]
// (Prometheus 2 also returns those at startMs), as the range selector
// sel[endMs−startMs] evaluated at endMs would, series sorted by labels.
func (r *Reader) Read(ctx context.Context, sel string, startMs, endMs int64) (model.Matrix, error) {
	if r.MaxSamples <= 0 {
		return r.query(ctx, sel, startMs, endMs)
	}
	spans, err := r.plan(ctx, sel, startMs, endMs)
	if err != nil {
		return nil, err
	}
	if len(spans) == 1 {
		return r.query(ctx, sel, startMs, endMs)
	}
	parts := make([]model.Matrix, len(spans))
	for i, s := range spans {
		if parts[i], err = r.query(ctx, sel, s.from, s.to); err != nil {
			return nil, err
		}
	}
	return merge(parts, spans), nil
}

// span is (from, to] in milliseconds.
type span struct{ from, to int64 }

// plan cuts (startMs, endMs] into spans of whole census slots, each
// holding at most MaxSamples samples of sel (a slot over it is counted
// again in finer slots). A span under the limit is one span.
func (r *Reader) plan(ctx context.Context, sel string, startMs, endMs int64) ([]span, error) {
	slots, err := r.census(ctx, sel, startMs, endMs)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, s := range slots {
		total += s.n
	}
	if total <= r.MaxSamples {
		return []span{{startMs, endMs}}, nil
	}
	var out []span
	cur, acc := span{from: startMs, to: startMs}, int64(0)
	flush := func() {
		if cur.to > cur.from {
			out = append(out, cur)
		}
		cur, acc = span{from: cur.to, to: cur.to}, 0
	}
	for _, s := range slots {
		switch {
		case s.n > r.MaxSamples:
			flush()
			if s.to-s.from <= 1 {
				return nil, fmt.Errorf("query %s: %d samples in the millisecond (%d, %d] exceed the sample limit %d", sel, s.n, s.from, s.to, r.MaxSamples)
			}
			sub, err := r.plan(ctx, sel, s.from, s.to)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			cur = span{from: s.to, to: s.to}
			continue
		case acc+s.n > r.MaxSamples:
			flush()
		}
		cur.to, acc = s.to, acc+s.n
	}
	flush()
	return out, nil
}

// slot is a census slot (from, to] and its samples.
type slot struct {
	from, to int64
	n        int64
}

// census counts sel's samples in slots covering (startMs, endMs]: about
// censusSlots of them, aligned to multiples of their length (so a server
// that aligns a range query's steps, as VictoriaMetrics does, counts the
// same slots), the first and last clipped to the span. A count on a
// slot's closed left edge (Prometheus 2) only over-counts.
func (r *Reader) census(ctx context.Context, sel string, startMs, endMs int64) ([]slot, error) {
	g := max((endMs-startMs+censusSlots-1)/censusSlots, 1)
	first := (startMs/g + 1) * g // the end of the slot holding startMs+1
	last := ((endMs + g - 1) / g) * g
	q, err := censusExpr(sel, g)
	if err != nil {
		return nil, err
	}
	var opts []v1.Option
	if r.Timeout > 0 {
		opts = append(opts, v1.WithTimeout(r.Timeout))
	}
	rng := v1.Range{Start: time.UnixMilli(first), End: time.UnixMilli(last), Step: time.Duration(g) * time.Millisecond}
	v, _, _, err := r.API.QueryRange(ctx, q, rng, opts...)
	if err != nil {
		return nil, fmt.Errorf("sample census %s: %w", q, err)
	}
	counts := map[int64]int64{}
	if m, ok := v.(model.Matrix); ok {
		for _, s := range m {
			for _, p := range s.Values {
				counts[int64(p.Timestamp)] += int64(p.Value)
			}
		}
	}
	var slots []slot
	for end := first; end <= last; end += g {
		slots = append(slots, slot{from: max(end-g, startMs), to: min(end, endMs), n: counts[end]})
	}
	return slots, nil
}

// censusExpr is the total of sel's samples in the g ms before each step.
// count_over_time drops the metric name, so a selector matching several
// names (a regular expression of alternatives) is counted name by name
// and the counts are added.
func censusExpr(sel string, g int64) (string, error) {
	ms, err := selectorParser.ParseMetricSelector(sel)
	if err != nil {
		return "", fmt.Errorf("sample census of %s: %w", sel, err)
	}
	var names, others []string
	for _, m := range ms {
		switch {
		case m.Name != model.MetricNameLabel:
			others = append(others, m.String())
		case m.Type == labels.MatchEqual:
			names = []string{m.Value}
		case m.Type == labels.MatchRegexp && literalAlternatives.MatchString(m.Value):
			names = strings.Split(m.Value, "|")
		default:
			return "", fmt.Errorf("sample census of %s: the metric names are not a list (set --query.max-samples 0 to read it in one query)", sel)
		}
	}
	rng := "[" + strconv.FormatInt(g, 10) + "ms]"
	if len(names) <= 1 {
		return "sum(count_over_time(" + sel + rng + "))", nil
	}
	terms := make([]string, len(names))
	for i, n := range names {
		terms[i] = "(sum(count_over_time(" + n + "{" + strings.Join(others, ",") + "}" + rng + ")) or vector(0))"
	}
	return strings.Join(terms, " + "), nil
}

// selectorParser parses series selectors into matchers.
var selectorParser = parser.NewParser(parser.Options{})

// literalAlternatives matches a regular expression that is a list of
// metric names: a|b|c.
var literalAlternatives = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\|[a-zA-Z_:][a-zA-Z0-9_:]*)*$`)

// query is the range selector sel over (fromMs, toMs], evaluated at toMs.
func (r *Reader) query(ctx context.Context, sel string, fromMs, toMs int64) (model.Matrix, error) {
	q := sel + "[" + strconv.FormatInt(max(toMs-fromMs, 1), 10) + "ms]"
	at := time.UnixMilli(toMs).UTC()
	var opts []v1.Option
	if r.Timeout > 0 {
		opts = append(opts, v1.WithTimeout(r.Timeout))
	}
	v, _, _, err := r.API.Query(ctx, q, at, opts...)
	if err != nil {
		return nil, fmt.Errorf("query %s at %s: %w", q, at.Format(time.RFC3339), err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("query %s: got a %s, want a matrix", q, v.Type())
	}
	return m, nil
}

// merge joins the parts read over consecutive spans: each series' samples
// in time order, a part after the first without those at or before its
// span's start (Prometheus 2 returns them, and the part before holds
// them), series sorted by labels as Prometheus sorts a matrix.
func merge(parts []model.Matrix, spans []span) model.Matrix {
	bySeries := map[model.Fingerprint]*model.SampleStream{}
	var out model.Matrix
	for i, m := range parts {
		for _, s := range m {
			vals := s.Values
			for i > 0 && len(vals) > 0 && int64(vals[0].Timestamp) <= spans[i].from {
				vals = vals[1:]
			}
			if len(vals) == 0 {
				continue
			}
			fp := s.Metric.Fingerprint()
			acc, ok := bySeries[fp]
			if !ok {
				acc = &model.SampleStream{Metric: s.Metric}
				bySeries[fp] = acc
				out = append(out, acc)
			}
			acc.Values = append(acc.Values, vals...)
		}
	}
	keys := make(map[*model.SampleStream]labels.Labels, len(out))
	for _, s := range out {
		b := labels.NewScratchBuilder(len(s.Metric))
		for k, v := range s.Metric {
			b.Add(string(k), string(v))
		}
		b.Sort()
		keys[s] = b.Labels()
	}
	slices.SortStableFunc(out, func(a, b *model.SampleStream) int { return labels.Compare(keys[a], keys[b]) })
	return out
}
