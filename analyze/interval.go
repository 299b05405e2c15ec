package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/report"
	"gonum.org/v1/gonum/stat"
)

// Interval forms (IntervalFigure.Form).
const (
	formRatio    = "ratio"
	formMean     = "mean"
	formWilson   = "wilson"
	formWoodruff = "woodruff"
	formDensity  = "density"
)

const (
	intervalMethod = "batch means over time: each figure's deviation summed per time bin of the formal stage (a request's share spread over its life), 5 to 10 consecutive batches at least twice the series' correlation reach (Politis-White lag window), the batches' bias extrapolated from half batches, Student's t"
	// minBatches is the fewest batches an interval takes: fewer independent
	// stretches cannot give an honest 95% interval.
	minBatches = 5
	// maxIntervalBins bounds the grid: bins of 1 s, wider for runs longer
	// than this many seconds.
	maxIntervalBins = 1 << 14
	ciLevel         = 0.95
	// minEnergyBatchSeconds is the shortest batch of a J/token figure:
	// GPU power has slow components (temperature, clocks) with correlation
	// times of tens of seconds that a short run's lag window cannot see
	// (at 120 s formal under a 20 s correlation time, batches of 10 s
	// covered 83-88%, of 20 s 93-95%: TestIntervalShortRun).
	minEnergyBatchSeconds = 20.0
)

// intervals fills report.json "intervals".
func (c *computation) intervals() {
	iv := &c.r.Intervals
	iv.Method, iv.Confidence = intervalMethod, ciLevel
	iv.CI95, iv.Figures = map[string][2]float64{}, map[string]report.IntervalFigure{}
	for _, f := range intervalKeys {
		iv.Figures[f.key] = report.IntervalFigure{Estimand: f.estimand, Form: f.form}
	}
	defer c.absentReasons()
	from, w, n, ok := c.intervalGrid()
	if !ok {
		iv.Reason = "no formal requests"
		return
	}
	iv.BinSeconds, iv.Bins = w, n
	s := c.intervalSeries(from, w, n)
	c.energyIntervals(iv, s)
	c.requestIntervals(iv, s)
	if c.latency != nil {
		lat := <-c.latency
		maps.Copy(iv.Figures, lat.figures)
		maps.Copy(iv.CI95, lat.ci95)
		l := &c.r.Latency
		l.TTFTSeconds, l.TPOTSeconds, l.LatencySeconds = lat.percentiles[0], lat.percentiles[1], lat.percentiles[2]
	}
}

// intervalGrid is the intervals' grid: n bins of w seconds from `from`;
// false without formal requests.
func (c *computation) intervalGrid() (from, w float64, n int, ok bool) {
	from, to, ok := c.intervalSpan()
	if !ok {
		return 0, 0, 0, false
	}
	n = max(1, int(math.Ceil((to-from)/max(1, (to-from)/maxIntervalBins))))
	return from, (to - from) / float64(n), n, true
}

// latencyPart is the latency percentiles (TTFT, TPOT, latency) and their
// intervals, for intervals to add to the report.
type latencyPart struct {
	percentiles [3]stats.Percentiles
	figures     map[string]report.IntervalFigure
	ci95        map[string][2]float64
}

// startLatencyIntervals computes the latency percentiles and their
// intervals on a goroutine of its own: they read only the formal requests
// in completion order (orderFormal) and the grid. intervals puts the
// percentiles in the report (its latency section) with their intervals.
func (c *computation) startLatencyIntervals() {
	from, w, n, ok := c.intervalGrid()
	if !ok {
		return
	}
	ch := make(chan latencyPart, 1)
	c.latency = ch
	go func() { ch <- c.latencyPart(from, w, n) }()
}

// latencyPart computes the latency percentiles and their intervals over n
// bins of width w from `from`, one list at a time, sorted in one buffer:
// the percentiles read from the sorted values, the bins counting the
// requests at or below each.
func (c *computation) latencyPart(from, w float64, n int) latencyPart {
	firstEnd, lastSend := math.Inf(1), math.Inf(-1)
	for _, i := range c.formal {
		firstEnd, lastSend = min(firstEnd, c.d.Requests[i].End), max(lastSend, c.d.Requests[i].Send)
	}
	grid := newBinSeries(from, w, n)
	s := &ivSeries{w: w, core: [2]int{grid.bin(firstEnd), grid.bin(lastSend)}}
	iv := &report.Intervals{CI95: map[string][2]float64{}, Figures: map[string]report.IntervalFigure{}}
	for _, f := range intervalKeys {
		if strings.HasPrefix(f.key, "latency.") {
			iv.Figures[f.key] = report.IntervalFigure{Estimand: f.estimand, Form: f.form}
		}
	}
	out := latencyPart{figures: iv.Figures, ci95: iv.CI95}
	buf := make([]float64, 0, len(c.formal))
	for k, name := range [3]string{"ttft_seconds", "tpot_seconds", "latency_seconds"} {
		v := c.latencyValues(k, buf)
		out.percentiles[k] = c.latencyPercentiles(k, v)
		var thr [4]float64
		for j, p := range pctQ {
			if m := len(v); m > 0 {
				thr[j] = v[stats.RankIndex(100*p, m)]
			}
		}
		den, below := c.latencyBins(k, thr, from, w, n)
		l := latSeries{name: name, sorted: v, den: den.sums()}
		run := make([]float64, n)
		for j := range below {
			for t, x := range below[j].sums() {
				run[t] += x
			}
			l.below[j] = slices.Clone(run)
		}
		c.latencyIntervals(iv, s, &l)
	}
	return out
}

// latencyBins counts, per bin, the formal requests in latency list k
// (den) and those whose value is at most threshold j but above the
// thresholds below it (below[j]).
func (c *computation) latencyBins(k int, thr [4]float64, from, w float64, n int) (den *binSeries, below [4]*binSeries) {
	den = newBinSeries(from, w, n)
	for j := range below {
		below[j] = newBinSeries(from, w, n)
	}
	for _, i := range c.formal {
		q := &c.d.Requests[i]
		v, ok := latencyValue(k, q)
		if !ok {
			continue
		}
		sp := den.span(q.Send, q.End)
		den.addSpan(sp, 1)
		if j, _ := slices.BinarySearch(thr[:], v); j < 4 && v <= thr[j] {
			below[j].addSpan(sp, 1)
		}
	}
	return den, below
}

// latencyPercentiles is latency list k's four percentiles as stats.Of
// finds them over the list in completion order: read from the sorted
// values v (an order statistic is the same value however it is found),
// unless a NaN or −0 is among them, whose place stats.Of's sort leaves to
// the input's order: then stats.Of of the list in completion order.
func (c *computation) latencyPercentiles(k int, v []float64) stats.Percentiles {
	if !slices.ContainsFunc(v, func(x float64) bool { return x != x || x == 0 && math.Signbit(x) }) {
		return stats.OfSorted(v)
	}
	list := make([]float64, 0, len(v))
	for _, i := range c.formal {
		if x, ok := latencyValue(k, &c.d.Requests[i]); ok {
			list = append(list, x)
		}
	}
	return stats.Of(list)
}

// latencyValues are latency list k's values over the formal requests,
// sorted in buf: read in request order (the sort does not depend on it),
// unless one is NaN or −0, whose place among equals slices.Sort leaves
// to the input's order, the completion order.
func (c *computation) latencyValues(k int, buf []float64) []float64 {
	v := buf[:0]
	unordered := false
	for i := range c.d.Requests {
		if q := &c.d.Requests[i]; q.Formal {
			if x, ok := latencyValue(k, q); ok {
				v = append(v, x)
				unordered = unordered || x != x || x == 0 && math.Signbit(x)
			}
		}
	}
	if unordered {
		v = v[:0]
		for _, i := range c.formal {
			if x, ok := latencyValue(k, &c.d.Requests[i]); ok {
				v = append(v, x)
			}
		}
	}
	radixSortFloats(v)
	return v
}

// intervalSpan is the formal stage, or the formal requests' span without
// its boundaries.
func (c *computation) intervalSpan() (from, to float64, ok bool) {
	if len(c.formal) == 0 {
		return 0, 0, false
	}
	if fb, ok := c.complete("formal"); ok && fb.End > fb.Start {
		return fb.Start, fb.End, true
	}
	from, to = math.Inf(1), math.Inf(-1)
	for _, i := range c.formal {
		from, to = min(from, c.d.Requests[i].Send), max(to, c.d.Requests[i].End)
	}
	return from, max(to, from+1), true
}

// absentReasons gives every figure without an interval a reason.
func (c *computation) absentReasons() {
	iv := &c.r.Intervals
	for key, f := range iv.Figures {
		if _, ok := iv.CI95[key]; ok {
			continue
		}
		switch {
		case figurePoint(c.r, key) == nil:
			f.Reason = "the figure itself is null"
		case f.Reason == "" && iv.Reason != "":
			f.Reason = iv.Reason
		case f.Reason == "":
			f.Reason = "no series to resample" // unreachable with a point
		}
		iv.Figures[key] = f
	}
}

// figurePoint is the report's value of an interval figure; nil when null.
func figurePoint(r *report.Report, key string) *float64 {
	switch key {
	case report.KeySteadyJPT:
		return r.SteadyState.JoulesPerToken
	case report.KeySustainedJPT:
		return r.SteadyState.SustainedLoadJoulesPerToken
	case report.KeyLifecycleJPT:
		return r.FullLifecycleJoulesPerToken
	case report.KeyThroughput:
		return r.ThroughputTokensPerSecond
	case report.KeyGoodputRatio:
		return r.Goodput.Ratio
	case report.KeyJoulesPerGood:
		return r.Goodput.JoulesPerGoodToken
	}
	for _, l := range latencyLists(r) {
		for i, name := range pctNames {
			if key == "latency."+l.name+"."+name {
				return l.p.ptr(i)
			}
		}
	}
	return nil
}

// ivSeries are the per-bin series the intervals are built from.
type ivSeries struct {
	w                  float64
	energy             []float64 // the GPUs' energy per bin; nil without curves
	tokens, goodTokens []float64 // output tokens of successful (good) formal requests
	good, count        []float64 // good and all formal requests
	steadyJ, steadyT   []float64 // the steady-state requests' joules and tokens
	sustJ, sustT       []float64 // the same without the drain
	steadyBins         [2]int    // the steady state's bins [from, to)
	sustBins           [2]int
	// core are the bins of full load, [the first formal completion, the
	// last formal send): the ramp before it and the drain after it move
	// every run alike, so the variance is estimated on the core and
	// scaled to a figure's bins by their share of its denominator.
	core [2]int
	// drainVar is the variance of the drain's length (s²): how far the
	// formal stage's end moves from run to run.
	drainVar float64
}

// latSeries is one latency list: its values sorted (failures +Inf), the
// count of its members per bin and, per percentile, the count at or below
// the report's value.
type latSeries struct {
	name   string
	sorted []float64
	den    []float64
	below  [4][]float64
}

// latencyValue is request q's value in latency list k (latency, TTFT,
// TPOT); false when it has none there.
func latencyValue(k int, q *Request) (float64, bool) {
	if !q.Success {
		return stats.Failed, true
	}
	switch k {
	case 0:
		return q.TTFT, q.HasTTFT
	case 1:
		return tpot(*q)
	}
	return q.Latency, true
}

// startIntervalBase builds, on a goroutine of its own, the interval
// series that need only the formal requests and the curves
// (intervalBase); intervalSeries adds the steady state's once the
// attribution and the steady state are in.
func (c *computation) startIntervalBase() {
	from, w, n, ok := c.intervalGrid()
	if !ok {
		return
	}
	ch := make(chan *ivSeries, 1)
	c.ivBase = ch
	go func() { ch <- c.intervalBase(from, w, n) }()
}

// intervalBase is the series over n bins of width w from `from` that
// need no attribution: the energy, the formal requests' tokens, good
// tokens, good and all requests, the core bins and the drain's variance.
func (c *computation) intervalBase(from, w float64, n int) *ivSeries {
	s := &ivSeries{w: w}
	s.energy = c.energyBins(from, w, n)
	ser := func() *binSeries { return newBinSeries(from, w, n) }
	tok, goodT, good, cnt := ser(), ser(), ser(), ser()
	firstEnd, lastSend := math.Inf(1), math.Inf(-1)
	for _, i := range c.formal {
		q := &c.d.Requests[i]
		a, b := q.Send, q.End
		firstEnd, lastSend = min(firstEnd, b), max(lastSend, a)
		sp := cnt.span(a, b) // every series here is on one grid
		cnt.addSpan(sp, 1)
		if !q.Success {
			continue
		}
		t := float64(q.OutputTokens)
		tok.addSpan(sp, t)
		if c.isGood(q) {
			goodT.addSpan(sp, t)
			good.addSpan(sp, 1)
		}
	}
	s.tokens, s.goodTokens, s.good, s.count = tok.sums(), goodT.sums(), good.sums(), cnt.sums()
	s.core = [2]int{tok.bin(firstEnd), tok.bin(lastSend)}
	s.drainVar = c.drainLengthVariance(lastSend)
	return s
}

// intervalSeries is the series over n bins of width w from `from`: those
// of intervalBase (started by startIntervalBase) and the steady state's
// joules and tokens, with and without the drain, built beside each other.
func (c *computation) intervalSeries(from, w float64, n int) *ivSeries {
	nss, steadyFrom, drain := c.steadyCounts()
	var sust steadyBins
	done := make(chan struct{})
	go func() { sust = c.steadyBins(from, w, n, steadyFrom, nss-drain); close(done) }()
	steady := c.steadyBins(from, w, n, steadyFrom, nss)
	s := <-c.ivBase
	<-done
	s.steadyJ, s.steadyT, s.sustJ, s.sustT = steady.j, steady.t, sust.j, sust.t
	bin := func(x float64) int { return gridBin(from, w, n, x) }
	if !math.IsInf(steady.from, 0) {
		s.steadyBins = [2]int{bin(steady.from), n}
	}
	if !math.IsInf(sust.from, 0) {
		s.sustBins = [2]int{bin(sust.from), bin(sust.to) + 1}
	}
	return s
}

// steadyBins are the joules and tokens per bin of the steady sequence's
// requests at positions [lo, hi) (the successful formal requests with
// tokens, in completion order), their first send and last end; zero
// series when the steady state was not reached (lo < 0) or nothing was
// attributed.
type steadyBins struct {
	j, t     []float64
	from, to float64
}

func (c *computation) steadyBins(from, w float64, n, lo, hi int) steadyBins {
	sj, st := newBinSeries(from, w, n), newBinSeries(from, w, n)
	out := steadyBins{from: math.Inf(1), to: math.Inf(-1)}
	pos := 0
	for _, i := range c.formal {
		q := &c.d.Requests[i]
		if !q.Success || q.OutputTokens <= 0 {
			continue
		}
		if lo >= 0 && pos >= lo && pos < hi && c.joules != nil {
			sp := sj.span(q.Send, q.End)
			sj.addSpan(sp, c.joules[i])
			st.addSpan(sp, float64(q.OutputTokens))
			out.from, out.to = min(out.from, q.Send), max(out.to, q.End)
		}
		pos++
	}
	out.j, out.t = sj.sums(), st.sums()
	return out
}

// drainVariance is the variance a figure's deviation (resid over bins)
// takes from the drain's length: the residual rate in its last bin times
// the drain length's spread; 0 unless the bins reach the grid's end.
func (s *ivSeries) drainVariance(resid []float64, bins [2]int) float64 {
	if bins[1] != len(resid) || bins[1] <= bins[0] {
		return 0
	}
	rate := resid[bins[1]-1] / s.w
	return rate * rate * s.drainVar
}

// drainLengthVariance is the variance of the drain's length, the longest
// remaining life of the requests in flight at the last formal send: each
// a uniform share of a length-biased draw from the formal requests'
// latencies (a request in flight at a random instant), drawn drainDraws
// times with a fixed seed.
func (c *computation) drainLengthVariance(lastSend float64) float64 {
	lat := make([]float64, 0, len(c.formal))
	inFlight := 0
	for _, i := range c.formal {
		q := &c.d.Requests[i]
		if q.Latency > 0 {
			lat = append(lat, q.Latency)
		}
		if q.Send <= lastSend && q.End > lastSend {
			inFlight++
		}
	}
	if len(lat) == 0 || inFlight == 0 {
		return 0
	}
	cum := make([]float64, len(lat))
	total := 0.0
	for k, l := range lat {
		total += l
		cum[k] = total
	}
	rng := rand.New(rand.NewPCG(drainSeed, uint64(len(lat))))
	var sum, sum2 float64
	for range drainDraws {
		longest := 0.0
		for range inFlight {
			k, _ := slices.BinarySearch(cum, rng.Float64()*total)
			longest = max(longest, rng.Float64()*lat[min(k, len(lat)-1)])
		}
		sum, sum2 = sum+longest, sum2+longest*longest
	}
	m := sum / drainDraws
	return max(0, sum2/drainDraws-m*m) * drainDraws / (drainDraws - 1)
}

// drainDraws and drainSeed are the drain length simulation's draws and
// seed.
const drainDraws, drainSeed = 400, 1

// steadyCounts are the successful formal requests with tokens, where the
// steady state starts among them (-1: not reached) and its drain.
func (c *computation) steadyCounts() (n, from, drain int) {
	for _, i := range c.formal {
		if q := &c.d.Requests[i]; q.Success && q.OutputTokens > 0 {
			n++
		}
	}
	return n, c.steadyFrom, c.r.SteadyState.DrainRequests
}

// energyBins is the GPUs' energy in each bin (the counter curves); nil
// without curves.
func (c *computation) energyBins(from, w float64, n int) []float64 {
	if len(c.curves) == 0 {
		return nil
	}
	tc := newTotalCursor(c.curves)
	out := make([]float64, n)
	prev := tc.at(from)
	for i := range out {
		e := tc.at(from + float64(i+1)*w)
		out[i], prev = e-prev, e
	}
	return out
}

// energyIntervals sets the J/token figures' intervals: the ratio's
// linearized deviation, numerator − figure × denominator, per bin. Their
// lag window is at least the energy series' own, where slow power noise
// shows clearest.
func (c *computation) energyIntervals(iv *report.Intervals, s *ivSeries) {
	r := c.r
	var minM, minL int
	var perBin float64 // the energy's long-run variance per bin
	if s.energy != nil && s.core[1]-s.core[0] >= 4 {
		core := s.energy[s.core[0]:s.core[1]]
		p := planBatches(core, 0, 0)
		minM, minL = p.lw.M, int(p.lw.reach())
		if p.B >= 2 {
			v, _ := batchVariance(core, p)
			perBin = v / float64(len(core))
		}
	}
	if s.energy != nil {
		minL = max(minL, int(math.Ceil(minEnergyBatchSeconds/2/s.w)))
	}
	ratio := func(key string, num, den []float64, bins [2]int, extra float64) {
		p := figurePoint(r, key)
		if p == nil || num == nil {
			return
		}
		resid, total := make([]float64, len(num)), 0.0
		for t := bins[0]; t < bins[1]; t++ {
			resid[t] = num[t] - *p*den[t]
			total += den[t]
		}
		sp := s.span(resid, den, bins, minM)
		sp.minL, sp.extra = minL, extra+s.drainVariance(resid, bins)
		setLinear(iv, key, *p, sp, total)
	}
	all := [2]int{0, len(s.tokens)}
	ratio(report.KeySteadyJPT, s.steadyJ, s.steadyT, s.steadyBins, 0)
	ratio(report.KeySustainedJPT, s.sustJ, s.sustT, s.sustBins, 0)
	ratio(report.KeyLifecycleJPT, s.energy, s.tokens, all, perBin*c.fixedStageSeconds()/s.w)
	ratio(report.KeyJoulesPerGood, s.energy, s.goodTokens, all, 0)
}

// fixedStageSeconds is the duration of the stages whose energy the
// full-lifecycle figure adds as measured: startup, warm-up, release.
func (c *computation) fixedStageSeconds() float64 {
	d := 0.0
	for _, name := range []string{"startup", "warmup", "release"} {
		d += c.r.Stages[name].DurationSeconds
	}
	return d
}

// requestIntervals sets throughput's (tokens per bin over the fixed formal
// duration) and the goodput ratio's (Wilson) intervals.
func (c *computation) requestIntervals(iv *report.Intervals, s *ivSeries) {
	r := c.r
	if p := r.ThroughputTokensPerSecond; p != nil {
		if fb, ok := c.complete("formal"); ok && fb.End > fb.Start {
			resid, all := make([]float64, len(s.tokens)), [2]int{0, len(s.tokens)}
			for t, v := range s.tokens {
				resid[t] = v - *p*s.w
			}
			sp := s.span(resid, s.tokens, all, 0)
			sp.extra = s.drainVariance(resid, all)
			setLinear(iv, report.KeyThroughput, *p, sp, fb.End-fb.Start)
		}
	}
	if p := r.Goodput.Ratio; p != nil {
		n := float64(r.Requests.Started)
		resid := make([]float64, len(s.good))
		for t := range resid {
			resid[t] = s.good[t] - *p*s.count[t]
		}
		setWilson(iv, report.KeyGoodputRatio, *p, n, s.span(resid, s.count, [2]int{0, len(resid)}, 0))
	}
}

// latencyIntervals sets a latency list's percentile intervals.
func (c *computation) latencyIntervals(iv *report.Intervals, s *ivSeries, l *latSeries) {
	m := len(l.sorted)
	if m == 0 {
		return
	}
	for j, q := range pctQ {
		key := "latency." + l.name + "." + pctNames[j]
		if math.IsInf(l.sorted[stats.RankIndex(100*q, m)], 1) {
			continue // the figure is null
		}
		below, total := 0.0, 0.0
		for t := range l.den {
			below, total = below+l.below[j][t], total+l.den[t]
		}
		f := below / total
		resid := make([]float64, len(l.den))
		for t := range resid {
			resid[t] = l.below[j][t] - f*l.den[t]
		}
		setQuantile(iv, key, l.sorted, q, s.span(resid, l.den, [2]int{0, len(resid)}, 0), total)
	}
}

// spanSeries is a figure's deviation per bin over its bins, with its
// denominator (what scales the core's variance to the bins).
type spanSeries struct {
	resid, den []float64
	bins, core [2]int
	// minM and minL are the least lag-window bandwidth and batch length
	// (bins) another series' correlation asks for; extra is variance added
	// as is (the fixed stages' energy).
	minM, minL int
	extra      float64
	w          float64
}

// span is the figure's series over bins, its core the grid's core within
// them (all of them when the core holds under half).
func (s *ivSeries) span(resid, den []float64, bins [2]int, minM int) spanSeries {
	core := [2]int{max(bins[0], s.core[0]), min(bins[1], s.core[1])}
	if 2*(core[1]-core[0]) < bins[1]-bins[0] {
		core = bins
	}
	return spanSeries{resid: resid, den: den, bins: bins, core: core, minM: minM, w: s.w}
}

// variance is the variance of the deviation's sum over the bins: batch
// means over the core, scaled by the bins' share of the denominator; the
// batches are recorded in f, and a reason returned when there are too few.
func (sp spanSeries) variance(f *report.IntervalFigure) (v float64, df int, why string) {
	x := sp.resid[sp.core[0]:sp.core[1]]
	p := planBatches(x, sp.minM, sp.minL)
	f.Batches, f.BatchSeconds, f.CorrelationSeconds = p.B, float64(p.L)*sp.w, p.lw.correlationBins()*sp.w
	if p.B < minBatches {
		need := float64(len(sp.resid)-len(x)+minBatches*2*p.H) * sp.w
		return 0, 0, fmt.Sprintf("too few independent stretches for an honest 95%% interval: %.0f s of data at full load hold %d batches of %.0f s (correlation scale %.1f s), %d needed; a formal stage of about %.0f s or longer gives one",
			float64(len(x))*sp.w, p.B, f.BatchSeconds, f.CorrelationSeconds, minBatches, math.Ceil(need/10)*10)
	}
	v, df = batchVariance(x, p)
	all, core := sum(sp.den[sp.bins[0]:sp.bins[1]]), sum(sp.den[sp.core[0]:sp.core[1]])
	if core > 0 {
		v *= all / core
	}
	return v + sp.extra, df, ""
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// setLinear sets the interval point ± t·√V/scale of a figure whose
// deviation is the series' sum over scale.
func setLinear(iv *report.Intervals, key string, point float64, sp spanSeries, scale float64) {
	f := iv.Figures[key]
	defer func() { iv.Figures[key] = f }()
	v, df, why := sp.variance(&f)
	if why != "" || !(scale > 0) {
		f.Reason = cmp.Or(why, "no denominator over the series")
		return
	}
	t := tQuantile((1+ciLevel)/2, df)
	se := math.Sqrt(v) / scale
	f.StandardError, f.DF = &se, df
	iv.CI95[key] = [2]float64{point - t*se, point + t*se}
}

// setWilson sets a proportion's interval: Wilson's score interval with t
// in place of z at the effective sample size p(1−p)/V, V the batch-means
// variance of the proportion (clamped to [batches, n]; batches when p is 0
// or 1, where V shows nothing). Its width follows p(1−p) at the ends, not
// the lucky point's.
func setWilson(iv *report.Intervals, key string, p, n float64, sp spanSeries) {
	f := iv.Figures[key]
	defer func() { iv.Figures[key] = f }()
	v, df, why := sp.variance(&f)
	if why != "" {
		f.Reason = why
		return
	}
	t := tQuantile((1+ciLevel)/2, df)
	v /= n * n
	m := n
	switch pq := p * (1 - p); {
	case pq == 0:
		m = float64(df + 1)
	case v > 0:
		m = min(n, max(float64(df+1), pq/v))
	}
	k := t * t / m
	center := (p + k/2) / (1 + k)
	half := t / (1 + k) * math.Sqrt(p*(1-p)/m+k/(4*m))
	se := half / t
	f.StandardError, f.DF = &se, df
	iv.CI95[key] = [2]float64{max(0, center-half), min(1, center+half)}
}

// setQuantile sets a percentile's interval from se_F, the batches'
// standard error of the proportion at or below it: none when q + t·se_F,
// mapped through the sorted values, lands on failed requests; with at
// least minDensityTail values beyond it on each side, the figure ±
// t·se_F/f̂ (Bahadur's representation, f̂ a kernel density estimate at the
// figure); else Woodruff's interval, q ± t·se_F mapped back through the
// sorted values (a gap in them above a percentile, such as stalled TTFTs
// above the fast ones, widens it far past the percentile's spread).
func setQuantile(iv *report.Intervals, key string, sorted []float64, q float64, sp spanSeries, n float64) {
	f := iv.Figures[key]
	defer func() { iv.Figures[key] = f }()
	v, df, why := sp.variance(&f)
	if why != "" {
		f.Reason = why
		return
	}
	t := tQuantile((1+ciLevel)/2, df)
	seF := math.Sqrt(v) / n
	m := len(sorted)
	lo := sorted[stats.RankIndex(100*max(0, q-t*seF), m)]
	hi := sorted[stats.RankIndex(100*min(1, q+t*seF), m)]
	if math.IsInf(hi, 1) {
		f.Reason = "the interval's upper end reaches the failed requests (+Inf in the latency lists)"
		return
	}
	if point := sorted[stats.RankIndex(100*q, m)]; min(q, 1-q)*float64(m) >= minDensityTail {
		if dens := kernelDensity(sorted, point); dens > 0 {
			lo, hi = max(0, point-t*seF/dens), point+t*seF/dens
			f.Form = formDensity
		}
	}
	se := (hi - lo) / (2 * t)
	f.StandardError, f.DF = &se, df
	iv.CI95[key] = [2]float64{lo, hi}
}

// minDensityTail is the fewest values beyond a percentile, on its short
// side, for its density-based interval: fewer (a p99 of under 5000
// requests) leave the kernel estimate in the tail too noisy, and Woodruff's
// interval holds there (docs/analyze.md, "Coverage, tested").
const minDensityTail = 50

// kernelDensity is the Gaussian kernel density estimate at x of the sorted
// values, failed requests (+Inf) counted in the total but adding no
// density, with Silverman's bandwidth 0.9·min(sd, IQR/1.34)·m^(−1/5) of
// the finite ones; 0 when it has no spread.
func kernelDensity(sorted []float64, x float64) float64 {
	m := len(sorted)
	fin := sorted[:sort.SearchFloat64s(sorted, math.Inf(1))]
	if len(fin) < 2 {
		return 0
	}
	spread := stat.StdDev(fin, nil)
	if iqr := fin[stats.RankIndex(75, len(fin))] - fin[stats.RankIndex(25, len(fin))]; iqr > 0 {
		spread = min(spread, iqr/1.34)
	}
	h := 0.9 * spread * math.Pow(float64(len(fin)), -0.2)
	if !(h > 0) {
		return 0
	}
	lo, hi := sort.SearchFloat64s(fin, x-6*h), sort.SearchFloat64s(fin, x+6*h)
	d := 0.0
	for _, v := range fin[lo:hi] {
		z := (x - v) / h
		d += math.Exp(-z * z / 2)
	}
	return d / (math.Sqrt(2*math.Pi) * h * float64(m))
}

// pctNames are the percentiles with intervals and pctQ their levels.
var (
	pctNames = [4]string{"p50", "p90", "p95", "p99"}
	pctQ     = [4]float64{0.50, 0.90, 0.95, 0.99}
)

// latencyList is one of the report's latency lists by its key part.
type latencyList struct {
	name string
	p    pctPtrs
}

type pctPtrs stats.Percentiles

func (p pctPtrs) ptr(i int) *float64 {
	return [4]*float64{p.P50, p.P90, p.P95, p.P99}[i]
}

func latencyLists(r *report.Report) []latencyList {
	return []latencyList{{"ttft_seconds", pctPtrs(r.Latency.TTFTSeconds)}, {"tpot_seconds", pctPtrs(r.Latency.TPOTSeconds)}, {"latency_seconds", pctPtrs(r.Latency.LatencySeconds)}}
}

// What the intervals cover (IntervalFigure.Estimand). Every interval is of
// the figure's expected value over repeated runs of the same design
// (configuration, load and formal duration or count), within the run's
// own noise: not across lifecycles (cold starts), the steady-state window
// choice or the meter's calibration.
const (
	estSteady     = "the method's steady-state J/token: joules attributed to the steady-state requests (the window taken as found, to the formal stage's end, the closed loop's drain included) over their output tokens"
	estSustained  = "the sustained-load J/token: the same steady-state requests without the drain (those ended by the last formal send, all under the full offered load)"
	estLifecycle  = "full-lifecycle J/token over the same formal duration: startup and release energy taken as measured (one lifecycle shows no spread for them), the formal stage's energy and tokens resampled in time"
	estGoodJPT    = "formal-stage joules over the output tokens of requests within the SLOs, misses clustered in time allowed for"
	estThroughput = "formal output tokens per second over the formal stage's fixed duration (the tokens' rate in time, not per-request counts treated as independent)"
	estGoodput    = "share of formal requests within the SLOs, misses clustered in time allowed for"
	estPercentile = "the nearest-rank percentile of the formal requests (failed requests +Inf), clustered tails allowed for"
)

// intervalKeys are the figures with an interval, in report order: their
// estimand and form, and how the markdown shows them (scale, format).
var intervalKeys = func() []intervalKey {
	keys := []intervalKey{
		{report.KeySteadyJPT, "steady-state J/token (drain incl.)", estSteady, formRatio, 1, "%.4f"},
		{report.KeySustainedJPT, "sustained-load J/token (no drain)", estSustained, formRatio, 1, "%.4f"},
		{report.KeyLifecycleJPT, "full-lifecycle J/token", estLifecycle, formRatio, 1, "%.4f"},
		{report.KeyJoulesPerGood, "J per good token", estGoodJPT, formRatio, 1, "%.4f"},
		{report.KeyThroughput, "throughput tokens/s", estThroughput, formMean, 1, "%.1f"},
		{report.KeyGoodputRatio, "goodput %", estGoodput, formWilson, 100, "%.2f"},
	}
	for _, l := range []struct{ key, label, format string }{{"ttft_seconds", "TTFT", "%.1f"}, {"tpot_seconds", "TPOT", "%.2f"}, {"latency_seconds", "latency", "%.0f"}} {
		for _, p := range pctNames {
			keys = append(keys, intervalKey{"latency." + l.key + "." + p, l.label + " " + p + " ms", estPercentile, formWoodruff, 1000, l.format})
		}
	}
	return keys
}()

type intervalKey struct {
	key, label, estimand, form string
	k                          float64
	format                     string
}

// ciText is " [lo, hi]" for the figure's interval, scaled by k; "" without
// one.
func ciText(r *report.Report, key string, k float64, format string) string {
	lo, hi, ok := r.CI95(key)
	if !ok {
		return ""
	}
	return " [" + fmt.Sprintf(format, lo*k) + ", " + fmt.Sprintf(format, hi*k) + "]"
}

// intervalsMarkdown is report.md's "Uncertainty" section: every figure's
// interval, or why it has none.
func intervalsMarkdown(p func(string, ...any), r *report.Report) {
	iv := r.Intervals
	p("## Uncertainty (95%% confidence intervals)\n\n")
	if iv.Reason != "" {
		p("No intervals: %s.\n\n", mdEscape(iv.Reason))
		return
	}
	p("%s; bins of %.3g s. Each interval covers the figure's expected value over repeated runs of the same design (each figure's estimand: report.json intervals.figures); the startup and release energy enter as measured plus the formal stage's power noise per second over their duration; the steady-state window is taken as found.\n\n",
		iv.Method, iv.BinSeconds)
	p("| figure | 95%% CI low | 95%% CI high | batches × s | no interval because |\n|---|---:|---:|---|---|\n")
	for _, f := range intervalKeys {
		fig, ok := iv.Figures[f.key]
		if !ok {
			continue // an older report
		}
		batches := "-"
		if fig.Batches > 0 {
			batches = fmt.Sprintf("%d × %.0f", fig.Batches, fig.BatchSeconds)
		}
		if lo, hi, ok := r.CI95(f.key); ok {
			p("| %s | %s | %s | %s | |\n", f.label, fmt.Sprintf(f.format, lo*f.k), fmt.Sprintf(f.format, hi*f.k), batches)
			continue
		}
		p("| %s | - | - | %s | %s |\n", f.label, batches, mdEscape(fig.Reason))
	}
	p("\n")
}
