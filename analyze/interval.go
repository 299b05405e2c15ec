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
// headline figures from a block bootstrap over the formal requests in
// completion order (docs/analyze.md, "Confidence intervals").
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
	bootstrapMethod = "block bootstrap (non-overlapping blocks) over the formal requests in completion order, percentile interval"
	bootstrapSeed   = 1
	// minBlocks is the fewest blocks a sequence must hold for an interval.
	minBlocks = 10
	// maxResamples and minResamples bound the resamples; bootstrapWork
	// is requests × resamples (fewer resamples for big runs).
	maxResamples, minResamples = 1000, 200
	bootstrapWork              = 5e7
)

// CI95 is the 95% interval of the figure with report key key; false when
// the report has none.
func (r *Report) CI95(key string) (lo, hi float64, ok bool) {
	v, ok := r.Intervals.CI95[key]
	return v[0], v[1], ok
}

// seqItem sums a block of formal requests.
type seqItem struct {
	joules, tokens, goodTokens, good float64
}

// ranked is one latency value and the block of the sequence it is in.
type ranked struct {
	v   float64
	blk int32
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
	n := len(c.formal)
	bs := newBlockSet(n, iv.BlockLengthRequests)
	sums := make([]seqItem, bs.b) // per block; good counts the good requests
	count := make([]float64, bs.b)
	var ttft, tpots, lat []ranked
	sumJ := 0.0
	for k, i := range c.formal {
		q, blk := &reqs[i], bs.blockOf[k]
		s := &sums[blk]
		count[blk]++
		if c.joules != nil {
			s.joules += c.joules[i]
			sumJ += c.joules[i]
		}
		if !q.Success {
			inf := ranked{math.Inf(1), blk}
			ttft, tpots, lat = append(ttft, inf), append(tpots, inf), append(lat, inf)
			continue
		}
		s.tokens += float64(q.OutputTokens)
		if c.isGood(q) {
			s.goodTokens += float64(q.OutputTokens)
			s.good++
		}
		lat = append(lat, ranked{q.Latency, blk})
		if q.HasTTFT {
			ttft = append(ttft, ranked{q.TTFT, blk})
		}
		if t, ok := tpot(*q); ok {
			tpots = append(tpots, ranked{t, blk})
		}
	}
	for _, l := range [][]ranked{ttft, tpots, lat} {
		slices.SortFunc(l, func(a, b ranked) int { return cmp.Compare(a.v, b.v) })
	}
	dur := 0.0
	if fb, ok := c.d.Phases["formal"]; ok && fb.HasStart && fb.HasEnd {
		dur = fb.End - fb.Start
	}
	lists := []struct {
		name     string
		v        []ranked
		perBlock []int32
	}{{"ttft_seconds", ttft, countPerBlock(ttft, bs.b)}, {"tpot_seconds", tpots, countPerBlock(tpots, bs.b)}, {"latency_seconds", lat, countPerBlock(lat, bs.b)}}
	reps := map[string][]float64{}
	add := func(key string, v float64) { reps[key] = append(reps[key], v) }
	for range iv.Resamples {
		w := bs.resample()
		var j, t, good, goodT, cnt float64
		for blk, x := range w {
			f := float64(x)
			j, t, goodT, good, cnt = j+f*sums[blk].joules, t+f*sums[blk].tokens, goodT+f*sums[blk].goodTokens, good+f*sums[blk].good, cnt+f*count[blk]
		}
		// Blocks differ in length by one: the sums are scaled to n requests.
		k := float64(n) / cnt
		j, t, goodT = j*k, t*k, goodT*k
		if c.joules != nil && r.Energy.LifecycleJoules != nil {
			add(KeyLifecycleJPT, (*r.Energy.LifecycleJoules-sumJ+j)/t)
		}
		if c.joules != nil && r.Energy.FormalJoules != nil {
			add(KeyJoulesPerGood, (*r.Energy.FormalJoules-sumJ+j)/goodT)
		}
		add(KeyThroughput, t/dur)
		add(KeyGoodputRatio, good/cnt)
		for _, l := range lists {
			if v, ok := weightedPercentiles(l.v, w, l.perBlock); ok {
				for i, name := range pctNames {
					add("latency."+l.name+"."+name, v[i])
				}
			}
		}
	}
	c.setFormalIntervals(iv, reps)
}

// setFormalIntervals keeps the intervals of the figures the report has.
func (c *computation) setFormalIntervals(iv *Intervals, reps map[string][]float64) {
	r := c.r
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
	bs := newBlockSet(len(num), blockLen)
	bn, bd := make([]float64, bs.b), make([]float64, bs.b)
	for k := range num {
		bn[bs.blockOf[k]] += num[k]
		bd[bs.blockOf[k]] += den[k]
	}
	out := make([]float64, 0, resamples)
	for range resamples {
		var a, d float64
		for blk, x := range bs.resample() {
			a, d = a+float64(x)*bn[blk], d+float64(x)*bd[blk]
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

// pctNames are the percentiles weightedPercentiles finds, in order.
var pctNames = [4]string{"p50", "p90", "p95", "p99"}

// weightedPercentiles is the nearest-rank p50/p90/p95/p99 (as
// percentilesOf) of the resample: each value in sorted counted as often as
// its block was drawn, w[blk]; perBlock counts sorted's values in each
// block. p50 is walked to from the bottom, the others from the top. ok is
// false for an empty resample.
func weightedPercentiles(sorted []ranked, w, perBlock []int32) (out [4]float64, ok bool) {
	total := 0
	for b, x := range w {
		total += int(x) * int(perBlock[b])
	}
	if total == 0 {
		return out, false
	}
	k50 := stats.RankIndex(50, total)
	cum := 0
	for _, x := range sorted {
		if cum += int(w[x.blk]); cum > k50 {
			out[0] = x.v
			break
		}
	}
	// From the top: the value at rank k is the last one whose values
	// below it number at most k.
	ks := [3]int{stats.RankIndex(99, total), stats.RankIndex(95, total), stats.RankIndex(90, total)}
	next, above := 0, 0
	for i := len(sorted) - 1; i >= 0 && next < len(ks); i-- {
		above += int(w[sorted[i].blk])
		for next < len(ks) && total-above <= ks[next] {
			out[3-next] = sorted[i].v
			next++
		}
	}
	return out, true
}

// countPerBlock counts sorted's values in each of b blocks.
func countPerBlock(sorted []ranked, b int) []int32 {
	n := make([]int32, b)
	for _, x := range sorted {
		n[x.blk]++
	}
	return n
}

// blockSet splits a sequence of n into b = max(1, ⌊n/L⌋) consecutive
// blocks of ⌊n/b⌋ or ⌈n/b⌉ (the non-overlapping block bootstrap,
// Carlstein 1986); a resample draws b of them with replacement. Drawing
// whole fixed blocks lets a resample be summed block by block and its
// percentiles found with the small table of draws in cache, which keeps
// a million requests within seconds.
type blockSet struct {
	b       int
	blockOf []int32 // the block of each position
	rng     *rand.Rand
	w       []int32
}

func newBlockSet(n, l int) *blockSet {
	b := max(1, n/max(1, l))
	bs := &blockSet{b: b, blockOf: make([]int32, n), rng: rand.New(rand.NewPCG(bootstrapSeed, uint64(n))), w: make([]int32, b)}
	for j := range b {
		for k := j * n / b; k < (j+1)*n/b; k++ {
			bs.blockOf[k] = int32(j)
		}
	}
	return bs
}

// resample returns how many times each block is drawn (reused by the next
// call).
func (bs *blockSet) resample() []int32 {
	clear(bs.w)
	for range bs.b {
		bs.w[bs.rng.IntN(bs.b)]++
	}
	return bs.w
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
