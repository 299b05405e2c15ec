package analyze

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/joulemark/joulemark/internal/stats"
	"gonum.org/v1/gonum/stat"
)

// Intervals is report.json "intervals": 95% confidence intervals of the
// headline figures from a circular block bootstrap over the formal
// requests in completion order (docs/analyze.md, "Confidence intervals").
// Consecutive requests overlap in time and share energy, so they are
// resampled in blocks, never one by one.
type Intervals struct {
	Method     string  `json:"method"`
	Confidence float64 `json:"confidence"`
	Resamples  int     `json:"resamples"`
	// BlockLengthRequests is L = max(⌈n^(1/3)⌉, ⌈k⌉) for n formal
	// requests, k the mean number of requests in flight (their summed
	// latency over the formal span).
	BlockLengthRequests int    `json:"block_length_requests"`
	Seed                uint64 `json:"seed"`
	// Reason says why there are none (fewer than minBlocks blocks).
	Reason string `json:"reason,omitempty"`
	// CI95 maps a figure's report key to its [low, high]; a figure that
	// is null, or whose interval has an infinite end (a percentile landing
	// on failed requests), has none.
	CI95 map[string][2]float64 `json:"ci95"`
}

// Interval figure keys: the report keys of the figures with an interval.
const (
	KeySteadyJPT     = "steady_state.joules_per_token"
	KeyLifecycleJPT  = "full_lifecycle_joules_per_token"
	KeyThroughput    = "throughput_tokens_per_second"
	KeyGoodputRatio  = "goodput.ratio"
	KeyJoulesPerGood = "goodput.joules_per_good_token"
)

const (
	bootstrapMethod = "circular block bootstrap over the formal requests in completion order, percentile interval"
	bootstrapSeed   = 1
	// minBlocks is the fewest blocks a sequence must hold for an interval.
	minBlocks = 10
	// maxResamples and minResamples bound the resamples; bootstrapWork
	// is requests × resamples (fewer resamples for big runs).
	maxResamples, minResamples = 1000, 200
	bootstrapWork              = 2e8
)

// CI95 is the 95% interval of the figure with report key key; false when
// the report has none.
func (r *Report) CI95(key string) (lo, hi float64, ok bool) {
	v, ok := r.Intervals.CI95[key]
	return v[0], v[1], ok
}

// seqItem is one formal request of the bootstrap's sequence.
type seqItem struct {
	joules, tokens, goodTokens float64
	good                       bool
}

// ranked is one latency value and its position in the sequence.
type ranked struct {
	v   float64
	pos int32
}

// intervals fills report.json "intervals".
func (c *computation) intervals() {
	iv := &c.r.Intervals
	iv.Method, iv.Confidence, iv.Seed, iv.CI95 = bootstrapMethod, 0.95, bootstrapSeed, map[string][2]float64{}
	n := len(c.formal)
	if n == 0 {
		iv.Reason = "no formal requests"
		return
	}
	iv.BlockLengthRequests = c.blockLength()
	if n < minBlocks*iv.BlockLengthRequests {
		iv.Reason = fmt.Sprintf("%d formal requests are fewer than %d blocks of %d", n, minBlocks, iv.BlockLengthRequests)
		return
	}
	iv.Resamples = int(min(maxResamples, max(minResamples, bootstrapWork/float64(n))))
	c.formalIntervals(iv)
	c.steadyInterval(iv)
}

// blockLength is L = max(⌈n^(1/3)⌉, ⌈k⌉): n^(1/3) is the order of the
// block length that minimizes the variance estimate's error (Hall,
// Horowitz and Jing 1995); k, the mean requests in flight, is how far in
// completion order a request's time and energy are shared, so a block
// holds most of a request's correlated neighbours.
func (c *computation) blockLength() int {
	n := len(c.formal)
	from, to, busy := math.Inf(1), math.Inf(-1), 0.0
	for _, i := range c.formal {
		q := &c.d.Requests[i]
		from, to = min(from, q.Send), max(to, q.End)
		busy += max(0, q.End-q.Send)
	}
	l := int(math.Ceil(math.Cbrt(float64(n))))
	if to > from {
		l = max(l, int(math.Ceil(busy/(to-from))))
	}
	return max(1, l)
}

// formalIntervals resamples the formal requests: full-lifecycle J/token,
// throughput, goodput and its J per good token, latency percentiles.
func (c *computation) formalIntervals(iv *Intervals) {
	r, reqs := c.r, c.d.Requests
	seq := make([]seqItem, len(c.formal))
	var ttft, tpots, lat []ranked
	sumJ := 0.0
	for k, i := range c.formal {
		q := &reqs[i]
		it := seqItem{}
		if c.joules != nil {
			it.joules = c.joules[i]
		}
		sumJ += it.joules
		pos := int32(k)
		if !q.Success {
			inf := ranked{math.Inf(1), pos}
			ttft, tpots, lat = append(ttft, inf), append(tpots, inf), append(lat, inf)
			seq[k] = it
			continue
		}
		it.tokens = float64(q.OutputTokens)
		it.good = c.isGood(q)
		if it.good {
			it.goodTokens = it.tokens
		}
		seq[k] = it
		lat = append(lat, ranked{q.Latency, pos})
		if q.HasTTFT {
			ttft = append(ttft, ranked{q.TTFT, pos})
		}
		if t, ok := tpot(*q); ok {
			tpots = append(tpots, ranked{t, pos})
		}
	}
	for _, l := range [][]ranked{ttft, tpots, lat} {
		slices.SortFunc(l, func(a, b ranked) int { return cmp.Compare(a.v, b.v) })
	}
	dur := 0.0
	if fb, ok := c.d.Phases["formal"]; ok && fb.HasStart && fb.HasEnd {
		dur = fb.End - fb.Start
	}
	reps := map[string][]float64{}
	add := func(key string, v float64) { reps[key] = append(reps[key], v) }
	b := newBootstrap(len(seq), iv.BlockLengthRequests)
	for range iv.Resamples {
		w := b.resample()
		var j, t, good, goodT float64
		for k, x := range w {
			f := float64(x)
			j, t, goodT = j+f*seq[k].joules, t+f*seq[k].tokens, goodT+f*seq[k].goodTokens
			if seq[k].good {
				good += f
			}
		}
		if c.joules != nil && r.Energy.LifecycleJoules != nil {
			add(KeyLifecycleJPT, (*r.Energy.LifecycleJoules-sumJ+j)/t)
		}
		if c.joules != nil && r.Energy.FormalJoules != nil {
			add(KeyJoulesPerGood, (*r.Energy.FormalJoules-sumJ+j)/goodT)
		}
		add(KeyThroughput, t/dur)
		add(KeyGoodputRatio, good/float64(len(seq)))
		for _, l := range []struct {
			name string
			v    []ranked
		}{{"ttft_seconds", ttft}, {"tpot_seconds", tpots}, {"latency_seconds", lat}} {
			for p, v := range weightedPercentiles(l.v, w) {
				add("latency."+l.name+"."+p, v)
			}
		}
	}
	point := map[string]*float64{KeyLifecycleJPT: r.FullLifecycleJoulesPerToken, KeyJoulesPerGood: r.Goodput.JoulesPerGoodToken,
		KeyThroughput: r.ThroughputTokensPerSecond, KeyGoodputRatio: r.Goodput.Ratio}
	for _, l := range []struct {
		name string
		p    stats.Percentiles
	}{{"ttft_seconds", r.Latency.TTFTSeconds}, {"tpot_seconds", r.Latency.TPOTSeconds}, {"latency_seconds", r.Latency.LatencySeconds}} {
		for _, pc := range []struct {
			name string
			v    *float64
		}{{"p50", l.p.P50}, {"p90", l.p.P90}, {"p95", l.p.P95}, {"p99", l.p.P99}} {
			point["latency."+l.name+"."+pc.name] = pc.v
		}
	}
	for key, v := range reps {
		if point[key] != nil {
			setInterval(iv, key, v)
		}
	}
}

// steadyInterval resamples the steady-state requests for the steady-state
// J/token (the window found is taken as given).
func (c *computation) steadyInterval(iv *Intervals) {
	if c.steadyFrom < 0 || c.joules == nil || c.r.SteadyState.JoulesPerToken == nil {
		return
	}
	var js, ts []float64
	for _, i := range c.formal {
		if q := &c.d.Requests[i]; q.Success && q.OutputTokens > 0 {
			js, ts = append(js, c.joules[i]), append(ts, float64(q.OutputTokens))
		}
	}
	js, ts = js[c.steadyFrom:], ts[c.steadyFrom:]
	if len(js) < minBlocks*iv.BlockLengthRequests {
		return
	}
	setInterval(iv, KeySteadyJPT, ratioReplicates(js, ts, iv.BlockLengthRequests, iv.Resamples))
}

// ratioReplicates is the bootstrap distribution of Σnum/Σden.
func ratioReplicates(num, den []float64, blockLen, resamples int) []float64 {
	b := newBootstrap(len(num), blockLen)
	out := make([]float64, 0, resamples)
	for range resamples {
		var a, d float64
		for k, x := range b.resample() {
			a, d = a+float64(x)*num[k], d+float64(x)*den[k]
		}
		out = append(out, a/d)
	}
	return out
}

// setInterval stores the percentile interval of the replicates when both
// ends are finite.
func setInterval(iv *Intervals, key string, reps []float64) {
	lo, hi, ok := percentileInterval(reps, iv.Confidence)
	if ok {
		iv.CI95[key] = [2]float64{lo, hi}
	}
}

// percentileInterval is the (1−conf)/2 and (1+conf)/2 quantiles of the
// replicates (linear interpolation); false when an end is not finite.
func percentileInterval(reps []float64, conf float64) (lo, hi float64, ok bool) {
	if len(reps) == 0 || slices.ContainsFunc(reps, math.IsNaN) {
		return 0, 0, false
	}
	slices.Sort(reps)
	lo = stat.Quantile((1-conf)/2, stat.LinInterp, reps, nil)
	hi = stat.Quantile((1+conf)/2, stat.LinInterp, reps, nil)
	return lo, hi, stats.Finite(lo) != nil && stats.Finite(hi) != nil
}

// weightedPercentiles is the nearest-rank p50/p90/p95/p99 (as
// percentilesOf) of the resample: each value in sorted counted w[pos]
// times.
func weightedPercentiles(sorted []ranked, w []int32) map[string]float64 {
	total := 0
	for _, x := range sorted {
		total += int(w[x.pos])
	}
	out := make(map[string]float64, 4)
	if total == 0 {
		return out
	}
	ps := []struct {
		name string
		p    float64
	}{{"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}}
	next, cum := 0, 0
	for _, x := range sorted {
		cum += int(w[x.pos])
		for next < len(ps) && cum > stats.RankIndex(ps[next].p, total) {
			out[ps[next].name] = x.v
			next++
		}
		if next == len(ps) {
			break
		}
	}
	return out
}

// bootstrap draws circular block resamples of a sequence of n: ⌈n/L⌉
// blocks of L consecutive positions (wrapping around), each starting at a
// uniform position, the last cut so that the resample holds n.
type bootstrap struct {
	n, l int
	rng  *rand.Rand
	w    []int32
}

func newBootstrap(n, l int) *bootstrap {
	return &bootstrap{n: n, l: min(l, n), rng: rand.New(rand.NewPCG(bootstrapSeed, uint64(n))), w: make([]int32, n)}
}

// resample returns how many times each position is drawn (reused by the
// next call).
func (b *bootstrap) resample() []int32 {
	clear(b.w)
	for left := b.n; left > 0; left -= b.l {
		s := b.rng.IntN(b.n)
		for j := range min(b.l, left) {
			b.w[(s+j)%b.n]++
		}
	}
	return b.w
}

// intervalKeys are the figures with an interval, in report order, and
// how the markdown shows them (scale, format, unit).
var intervalKeys = []struct {
	key, label string
	k          float64
	format     string
}{
	{KeySteadyJPT, "steady-state J/token", 1, "%.4f"},
	{KeyLifecycleJPT, "full-lifecycle J/token", 1, "%.4f"},
	{KeyJoulesPerGood, "J per good token", 1, "%.4f"},
	{KeyThroughput, "throughput tokens/s", 1, "%.1f"},
	{KeyGoodputRatio, "goodput %", 100, "%.2f"},
	{"latency.ttft_seconds.p50", "TTFT p50 ms", 1000, "%.1f"},
	{"latency.ttft_seconds.p99", "TTFT p99 ms", 1000, "%.1f"},
	{"latency.tpot_seconds.p50", "TPOT p50 ms", 1000, "%.2f"},
	{"latency.tpot_seconds.p99", "TPOT p99 ms", 1000, "%.2f"},
	{"latency.latency_seconds.p50", "latency p50 ms", 1000, "%.0f"},
	{"latency.latency_seconds.p99", "latency p99 ms", 1000, "%.0f"},
}

// ciText is " [lo, hi]" for the figure's interval, scaled by k; "" without
// one.
func ciText(r *Report, key string, k float64, format string) string {
	lo, hi, ok := r.CI95(key)
	if !ok {
		return ""
	}
	return " [" + fmt.Sprintf(format, lo*k) + ", " + fmt.Sprintf(format, hi*k) + "]"
}

// intervalsMarkdown is report.md's "Uncertainty" section.
func intervalsMarkdown(p func(string, ...any), r *Report) {
	iv := r.Intervals
	p("## Uncertainty (95%% confidence intervals)\n\n")
	if iv.Reason != "" || len(iv.CI95) == 0 {
		p("No intervals: %s.\n\n", mdEscape(orDash(iv.Reason)))
		return
	}
	p("%s; block length %d requests, %d resamples, seed %d. The startup and release energy enter as measured (one lifecycle gives no spread for them); the steady-state window is taken as found.\n\n",
		iv.Method, iv.BlockLengthRequests, iv.Resamples, iv.Seed)
	p("| figure | 95%% CI low | 95%% CI high |\n|---|---:|---:|\n")
	for _, f := range intervalKeys {
		if lo, hi, ok := r.CI95(f.key); ok {
			p("| %s | %s | %s |\n", f.label, fmt.Sprintf(f.format, lo*f.k), fmt.Sprintf(f.format, hi*f.k))
		}
	}
	p("\n")
}
