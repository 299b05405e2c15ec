package analyze

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/report"
)

// The fit's refusal conditions and bin width.
const (
	prefillDecodeMethod = "OLS of the formal stage's GPU power (energy counter, summed over GPUs) per bin on the prefill and decode token rates at lags -K..K bins (K by BIC), with an intercept; coefficients summed over the lags; block bootstrap over the bins in time order, percentile interval"
	// minFitBins is the fewest bins a fit takes (and minBlocks blocks):
	// four per coefficient at 1 s bins (15 with 3 lags each way; more lags
	// only with four bins per coefficient).
	minFitBins = 60
	// maxRateCorrelation is the largest |correlation| of the two rate
	// series a fit takes.
	maxRateCorrelation = 0.95
)

// fitLagSeconds is how far (each way) a token's energy may show from the
// bin its token is in: the fit tries K = 0 … ⌈fitLagSeconds / bin width⌉
// and keeps the K of the lowest BIC. 6 s holds 98% of a power response
// with a 1.5 s time constant (the demo's simulated GPUs; 3 s left 13% of a
// prefill burst's energy out) and any clock offset between the bench and
// the exporters under it.
const fitLagSeconds = 6.0

// fitBootstrapWork is bins × resamples: a long stage (an hour of 1 s
// bins) gets fewer resamples.
const fitBootstrapWork = 1e6

// fitSpan reports whether the fit reads request q: every request with a
// first token in order (warm-up too: its tokens draw power in the formal
// stage's bins).
func fitSpan(q *Request) bool {
	return q.HasTTFT && q.FirstToken() >= q.Send && q.End >= q.FirstToken()
}

// fitBins is the binned data: the power of the formal stage's bins and the
// two rates over the same bins plus lags more on each side.
type fitBins struct {
	power           []float64 // n bins of the formal stage; NaN: left out
	prefill, decode []float64 // n + 2·lags bins, from lags bins before the stage
	from, width     float64   // the first rate bin's start, the bin width
	lags            int       // the most lags the rates are padded for
}

// prefillDecode fills report.json "prefill_decode".
func (c *computation) prefillDecode() {
	pd := &report.PrefillDecode{Method: prefillDecodeMethod}
	c.r.PrefillDecode = pd
	fb, ok := c.complete("formal")
	if !ok || len(c.curves) == 0 {
		pd.Refused = "no formal stage with GPU energy"
		return
	}
	width := 1.0
	if !math.IsNaN(c.interval) {
		width = max(width, c.interval)
	}
	pd.BinSeconds = width
	bins := c.binPower(fb.Start, fb.End, width, int(math.Ceil(fitLagSeconds/width)))
	spreadRates(&bins, c.d.Requests)
	bins.dropIdle(c.d.Requests)
	rows := bins.measured()
	pd.Bins = len(rows)
	fitPrefillDecode(pd, &bins, rows, blockLengthBins(c.d.Requests, len(rows), width))
}

// binPower is the mean power of the summed GPU energy curves over each
// whole bin of width in [from, to]; NaN where a curve does not cover the
// bin or an exporter was down during it.
func (c *computation) binPower(from, to, width float64, lags int) fitBins {
	n := max(0, int(math.Floor((to-from)/width)))
	b := fitBins{power: make([]float64, n), prefill: make([]float64, n+2*lags), decode: make([]float64, n+2*lags),
		from: from - float64(lags)*width, width: width, lags: lags}
	for i := range b.power {
		a, e := from+float64(i)*width, from+float64(i+1)*width
		sum := 0.0
		for _, cv := range c.curves {
			j, ok := cv.between(a, e)
			if !ok {
				sum = math.NaN()
				break
			}
			sum += j
		}
		for _, g := range c.d.ExporterRestarts {
			if g[0] < e && g[1] > a {
				sum = math.NaN()
			}
		}
		b.power[i] = sum / width
	}
	return b
}

// spreadRates adds each request's input tokens uniformly over [send, first
// token] to the prefill rate and its output tokens uniformly over [first
// token, end] to the decode rate (per-token times are not recorded); a
// zero-length span puts its tokens in the bin it falls in.
func spreadRates(b *fitBins, reqs []Request) {
	for i := range reqs {
		if q := &reqs[i]; fitSpan(q) {
			b.spread(b.prefill, q.Send, q.FirstToken(), float64(q.InputTokens))
			b.spread(b.decode, q.FirstToken(), q.End, float64(q.OutputTokens))
		}
	}
}

// spread adds tokens spread uniformly over [t0, t1] to the rate series r
// (tokens per second per bin).
func (b *fitBins) spread(r []float64, t0, t1, tokens float64) {
	n := len(r)
	if tokens <= 0 || n == 0 {
		return
	}
	end := b.from + float64(n)*b.width
	if t1 == t0 {
		if i := int(math.Floor((t0 - b.from) / b.width)); t0 >= b.from && i < n {
			r[i] += tokens / b.width
		}
		return
	}
	lo, hi := max(t0, b.from), min(t1, end)
	for i := max(0, int(math.Floor((lo-b.from)/b.width))); i < n && lo < hi; i++ {
		a, e := b.from+float64(i)*b.width, b.from+float64(i+1)*b.width
		if o := min(e, hi) - max(a, lo); o > 0 {
			r[i] += tokens * o / (t1 - t0) / b.width
		}
		if e >= hi {
			break
		}
	}
}

// busy says whether the fit reads request q and it overlaps the rate
// bins, which end at end.
func (b *fitBins) busy(q *Request, end float64) bool {
	return fitSpan(q) && q.End > b.from && q.Send < end
}

// busyUnion is the union of the [send, end] of every request the fit
// reads that overlaps the rate bins: its disjoint spans, in time order.
// Requests in completion order are walked from the last (unionByEnd);
// others are sorted by send (busySpans) and merged.
func (b *fitBins) busyUnion(reqs []Request) [][2]float64 {
	if u, ok := b.unionByEnd(reqs); ok {
		return u
	}
	return unionSorted(b.busySpans(reqs))
}

// unionSorted is the union of spans sorted by start: its disjoint spans,
// in time order.
func unionSorted(sorted [][2]float64) [][2]float64 {
	var out [][2]float64
	for i := 0; i < len(sorted); {
		lo, hi := sorted[i][0], sorted[i][1]
		for i++; i < len(sorted) && sorted[i][0] <= hi; i++ {
			hi = max(hi, sorted[i][1])
		}
		out = append(out, [2]float64{lo, hi})
	}
	return out
}

// unionByEnd is busyUnion of requests whose ends never decrease, without
// a sort: walked from the last end back, a request that ends before the
// current span starts touches none of it nor any request walked later,
// so the span is whole. false when the ends decrease somewhere.
func (b *fitBins) unionByEnd(reqs []Request) ([][2]float64, bool) {
	end := b.from + float64(len(b.prefill))*b.width
	last := math.Inf(-1)
	for i := range reqs {
		if q := &reqs[i]; b.busy(q, end) {
			if q.End < last {
				return nil, false
			}
			last = q.End
		}
	}
	var out [][2]float64
	var cur [2]float64
	have := false
	for i := len(reqs) - 1; i >= 0; i-- {
		q := &reqs[i]
		switch {
		case !b.busy(q, end):
		case !have:
			cur, have = [2]float64{q.Send, q.End}, true
		case q.End >= cur[0]:
			cur[0] = min(cur[0], q.Send)
		default:
			out = append(out, cur)
			cur = [2]float64{q.Send, q.End}
		}
	}
	if have {
		out = append(out, cur)
	}
	slices.Reverse(out)
	return out, true
}

// busySpans is the [send, end] of every request the fit reads that
// overlaps the rate bins, in send order: 16 bytes a request, sorted in
// place (a sorted copy of whole requests cost 200 MB at 1M requests).
func (b *fitBins) busySpans(reqs []Request) [][2]float64 {
	end := b.from + float64(len(b.prefill))*b.width
	n := 0
	for i := range reqs {
		if b.busy(&reqs[i], end) {
			n++
		}
	}
	spans := make([][2]float64, 0, n)
	for i := range reqs {
		if q := &reqs[i]; b.busy(q, end) {
			spans = append(spans, [2]float64{q.Send, q.End})
		}
	}
	radixSortBy(spans, func(s [2]float64) uint64 { return floatKey(s[0]) })
	return spans
}

// dropIdle leaves out (sets to NaN the power of) every bin with a moment
// when no request was in flight: an engine that stops running steps draws
// less than its static power, which a linear fit would misread as
// per-token energy.
func (b *fitBins) dropIdle(reqs []Request) {
	n := len(b.prefill)
	busy := make([]float64, n) // seconds of each rate bin with a request in flight
	end := b.from + float64(n)*b.width
	for _, span := range b.busyUnion(reqs) {
		lo, hi := max(span[0], b.from), min(span[1], end)
		for k := max(0, int(math.Floor((lo-b.from)/b.width))); k < n && lo < hi; k++ {
			a, e := b.from+float64(k)*b.width, b.from+float64(k+1)*b.width
			busy[k] += max(0, min(e, hi)-max(a, lo))
			if e >= hi {
				break
			}
		}
	}
	for i := range b.power {
		if busy[i+b.lags] < b.width*(1-1e-9) {
			b.power[i] = math.NaN()
		}
	}
}

// measured is the bins with a power figure, in time order.
func (b *fitBins) measured() []int {
	var rows []int
	for i, p := range b.power {
		if !math.IsNaN(p) {
			rows = append(rows, i)
		}
	}
	return rows
}

// blockLengthBins is the bootstrap's block length over n bins of width:
// max(⌈n^(1/3)⌉, ⌈mean request latency / width⌉), so a block spans most
// of one request's tokens (which are spread over its bins).
func blockLengthBins(reqs []Request, n int, width float64) int {
	l := int(math.Ceil(math.Cbrt(float64(n))))
	sum, k := 0.0, 0
	for i := range reqs {
		if q := &reqs[i]; fitSpan(q) {
			sum, k = sum+q.End-q.Send, k+1
		}
	}
	if k > 0 {
		l = max(l, int(math.Ceil(sum/float64(k)/width)))
	}
	return max(1, l)
}

// fitPrefillDecode checks that the rates can be told apart, picks the
// lags, fits and bootstraps; it refuses a fit whose per-token energies
// come out too imprecise to use.
func fitPrefillDecode(pd *report.PrefillDecode, b *fitBins, rows []int, blockLen int) {
	n := len(rows)
	if n < max(minFitBins, minBlocks*blockLen) {
		pd.Refused = fmt.Sprintf("%d bins of %g s, fewer than %d (and %d blocks of %d): run a longer formal stage", n, pd.BinSeconds, minFitBins, minBlocks, blockLen)
		return
	}
	if refusal := separable(pd, b, rows); refusal != "" {
		pd.Refused = refusal
		return
	}
	y := mat.NewVecDense(n, nil)
	for k, i := range rows {
		y.SetVec(k, b.power[i])
	}
	lags, x, beta, ok := chooseLags(b, rows, y)
	if !ok {
		pd.Refused = "the least-squares problem is singular"
		return
	}
	pd.LagBins = lags
	st, ep, ed := sumLags(beta, lags)
	pd.StaticWatts, pd.JoulesPerPrefillToken, pd.JoulesPerDecodeToken = new(st), new(ep), new(ed)
	var fitted mat.VecDense
	fitted.MulVec(x, mat.NewVecDense(len(beta), beta))
	pd.RSquared = stats.Finite(stat.RSquaredFrom(fitted.RawVector().Data, y.RawVector().Data, nil))
	pd.ResidualStdWatts = stats.Finite(math.Sqrt(rss(x, y, beta) / float64(n-len(beta))))
	bootstrapFit(pd, x, y, blockLen, lags)
	if reason := imprecise(pd); reason != "" {
		*pd = report.PrefillDecode{Method: pd.Method, BinSeconds: pd.BinSeconds, LagBins: pd.LagBins, Bins: pd.Bins,
			RateCorrelation: pd.RateCorrelation, ConditionNumber: pd.ConditionNumber, Refused: reason}
	}
}

// chooseLags fits K = 0 … b.lags (while there are four bins per
// coefficient) and keeps the K of the lowest Bayesian information
// criterion, n·ln(RSS/n) + p·ln(n): more lags only where the
// power's response to the tokens needs them. It returns K, its design and
// coefficients; false when every fit is singular.
func chooseLags(b *fitBins, rows []int, y *mat.VecDense) (int, *mat.Dense, []float64, bool) {
	n := float64(len(rows))
	best, bestBIC := -1, math.Inf(1)
	var bestX *mat.Dense
	var bestBeta []float64
	// At least four bins per coefficient, as minFitBins asks of K = 3.
	for k := 0; k <= b.lags && 1+2*(2*k+1) <= len(rows)/4; k++ {
		x := designMatrix(b, rows, k)
		beta, ok := ols(x, y)
		if !ok {
			continue
		}
		if bic := n*math.Log(rss(x, y, beta)/n) + float64(len(beta))*math.Log(n); bic < bestBIC || best < 0 {
			best, bestBIC, bestX, bestBeta = k, bic, x, beta
		}
	}
	return best, bestX, bestBeta, best >= 0
}

// rss is the residual sum of squares of y on x·beta.
func rss(x *mat.Dense, y *mat.VecDense, beta []float64) float64 {
	var fitted mat.VecDense
	fitted.MulVec(x, mat.NewVecDense(len(beta), beta))
	sum := 0.0
	for k := range y.Len() {
		d := y.AtVec(k) - fitted.AtVec(k)
		sum += d * d
	}
	return sum
}

// maxRelHalfWidth is the widest 95% interval a per-token energy may have,
// as its half-width over the estimate: beyond ±50% the fit says little
// more than which of the two costs more.
const maxRelHalfWidth = 0.5

// imprecise is why the fitted per-token energies cannot be used (a 95%
// interval missing, reaching 0 or below, or wider than ±maxRelHalfWidth of
// the estimate) with what would fix it; "" when both can.
func imprecise(pd *report.PrefillDecode) string {
	for _, f := range []struct {
		key, name, fix string
		v              *float64
	}{
		{report.KeyJoulesPerPrefillToken, "prefill", fixPrefill, pd.JoulesPerPrefillToken},
		{report.KeyJoulesPerDecodeToken, "decode", fixDecode, pd.JoulesPerDecodeToken},
	} {
		ci, ok := pd.CI95[f.key]
		switch {
		case !ok:
			return fmt.Sprintf("the %s energy has no interval (a resample's fit was singular): %s", f.name, f.fix)
		case ci[0] <= 0:
			return fmt.Sprintf("the %s energy's 95%% interval [%.4g, %.4g] J reaches 0: the %s rate varies too little against the power's noise; %s", f.name, ci[0], ci[1], f.name, f.fix)
		case (ci[1]-ci[0])/2 > maxRelHalfWidth*math.Abs(*f.v):
			return fmt.Sprintf("the %s energy's 95%% interval [%.4g, %.4g] J is wider than ±%.0f%% of its estimate %.4g: the %s rate varies too little against the power's noise; %s", f.name, ci[0], ci[1], 100*maxRelHalfWidth, *f.v, f.name, f.fix)
		}
	}
	return ""
}

// What would separate a rate that the fit cannot tell apart.
const (
	fixPrefill = "vary the prompt lengths, run an open loop (bench --workload.trace) or a longer formal stage"
	fixDecode  = "vary the load (run an open loop or a trace: a saturated closed loop decodes at an almost constant rate) or the answer lengths, or run a longer formal stage"
	fixBoth    = "vary the prompt lengths independently of the answer lengths, or run an open loop (bench --workload.trace)"
)

// separable is why the rates of the rows cannot be told apart from each
// other, "" when they can. It judges the standardized design: each rate
// centred and scaled to unit variance (an intercept and the lags do not
// enter, so neither a rate's mean nor its smoothness counts against it);
// it records the rates' correlation and the standardized design's
// condition number. Whether a rate that moves little still moves enough
// for the power's noise is the intervals' to say (imprecise).
func separable(pd *report.PrefillDecode, b *fitBins, rows []int) string {
	n := len(rows)
	rp, rd := make([]float64, n), make([]float64, n)
	for k, i := range rows {
		rp[k], rd[k] = b.prefill[i+b.lags], b.decode[i+b.lags]
	}
	pd.RateCorrelation = stats.Finite(stat.Correlation(rp, rd, nil))
	pd.ConditionNumber = stats.Finite(standardizedCondition(rp, rd))
	switch {
	case !varies(rp):
		return "the prefill rate does not vary over the bins: " + fixPrefill
	case !varies(rd):
		return "the decode rate does not vary over the bins: " + fixDecode
	case pd.RateCorrelation == nil || pd.ConditionNumber == nil:
		return "the rates' correlation or condition number is not finite"
	case math.Abs(*pd.RateCorrelation) > maxRateCorrelation:
		return fmt.Sprintf("the prefill and decode rates move together (correlation %.3f, above %g; condition number of the standardized rates %.1f): %s",
			*pd.RateCorrelation, maxRateCorrelation, *pd.ConditionNumber, fixBoth)
	}
	return ""
}

// varies reports whether x moves by more than rounding: a standard
// deviation above 1e-9 of its mean's magnitude.
func varies(x []float64) bool {
	m, sd := stat.MeanStdDev(x, nil)
	return sd > 1e-9*math.Abs(m) && sd > 0
}

// standardizedCondition is the 2-norm condition number of the columns
// [a, b], each centred and scaled to unit length: √((1+|ρ|)/(1−|ρ|)) for
// their correlation ρ, 1 for uncorrelated rates.
func standardizedCondition(a, b []float64) float64 {
	n := len(a)
	z := mat.NewDense(n, 2, nil)
	for j, col := range [][]float64{a, b} {
		m, sd := stat.MeanStdDev(col, nil)
		if sd == 0 {
			return math.Inf(1)
		}
		for i, v := range col {
			z.Set(i, j, (v-m)/(sd*math.Sqrt(float64(n-1))))
		}
	}
	return mat.Cond(z, 2)
}

// designMatrix is, per row (a power bin i), 1, then the prefill rate of
// bins i−lags … i+lags, then the decode rate of the same bins (lags ≤
// b.lags, the padding of the rates).
func designMatrix(b *fitBins, rows []int, lags int) *mat.Dense {
	w, off := 2*lags+1, b.lags-lags
	x := mat.NewDense(len(rows), 1+2*w, nil)
	for k, i := range rows {
		x.Set(k, 0, 1)
		for j := range w {
			x.Set(k, 1+j, b.prefill[i+off+j])
			x.Set(k, 1+w+j, b.decode[i+off+j])
		}
	}
	return x
}

// sumLags is the static power and the two rates' coefficients summed over
// their lags: the energy of one token, wherever in the lag window its
// power shows.
func sumLags(beta []float64, lags int) (static, prefill, decode float64) {
	w := 2*lags + 1
	for j := range w {
		prefill += beta[1+j]
		decode += beta[1+w+j]
	}
	return beta[0], prefill, decode
}

// ols solves min Σ (y_i − x_i·β)² by QR (gonum's VecDense.SolveVec);
// false when singular.
func ols(x *mat.Dense, y *mat.VecDense) ([]float64, bool) {
	var out mat.VecDense
	if err := out.SolveVec(x, y); err != nil {
		return nil, false
	}
	return out.RawVector().Data, true
}

// bootstrapFit refits on block-bootstrap resamples of the bins (each bin
// weighted by how often its block was drawn) and keeps the percentile
// intervals. A resample's weighted normal equations are the drawn blocks'
// Gram matrices of the standardized design added up (p×p a block, formed
// once), so a resample costs blocks × p², not bins × p² as a QR refit
// does.
func bootstrapFit(pd *report.PrefillDecode, x *mat.Dense, y *mat.VecDense, blockLen, lags int) {
	n, p := x.Dims()
	pd.BlockLengthBins, pd.Seed = blockLen, bootstrapSeed
	pd.Resamples = int(min(maxResamples, max(minResamples, fitBootstrapWork/float64(n))))
	bs := newBlockSet(n, blockLen)
	z, mean, sd := standardize(x)
	grams, zys := blockGrams(z, y, bs)
	reps := [3][]float64{}
	g, zy := make([]float64, p*p), make([]float64, p)
	beta := make([]float64, p)
	for range pd.Resamples {
		draws := bs.resample()
		clear(g)
		clear(zy)
		for j, d := range draws {
			if d > 0 {
				floats.AddScaled(g, float64(d), grams[j*p*p:(j+1)*p*p])
				floats.AddScaled(zy, float64(d), zys[j*p:(j+1)*p])
			}
		}
		st, ep, ed := math.NaN(), math.NaN(), math.NaN()
		if unstandardize(g, zy, mean, sd, beta) {
			st, ep, ed = sumLags(beta, lags)
		}
		reps[0], reps[1], reps[2] = append(reps[0], st), append(reps[1], ep), append(reps[2], ed)
	}
	pd.CI95 = map[string][2]float64{}
	for k, key := range []string{report.KeyStaticWatts, report.KeyJoulesPerPrefillToken, report.KeyJoulesPerDecodeToken} {
		if lo, hi, ok := percentileInterval(reps[k], 0.95); ok {
			pd.CI95[key] = [2]float64{lo, hi}
		}
	}
}

// standardize returns x with every column but the first (the intercept)
// centred and scaled to unit standard deviation, and the columns' means
// and deviations (a column that does not vary is only centred).
func standardize(x *mat.Dense) (*mat.Dense, []float64, []float64) {
	n, p := x.Dims()
	z := mat.DenseCopyOf(x)
	mean, sd := make([]float64, p), make([]float64, p)
	sd[0] = 1
	col := make([]float64, n)
	for j := 1; j < p; j++ {
		mat.Col(col, j, x)
		mean[j], sd[j] = stat.MeanStdDev(col, nil)
		if !(sd[j] > 0) {
			sd[j] = 1
		}
		for i, v := range col {
			z.Set(i, j, (v-mean[j])/sd[j])
		}
	}
	return z, mean, sd
}

// blockGrams is each block's Z_bᵀZ_b (p×p, row-major, both triangles)
// and Z_bᵀy_b (p), held in two flat slices.
func blockGrams(z *mat.Dense, y *mat.VecDense, bs *blockSet) (grams, zys []float64) {
	n, p := z.Dims()
	grams, zys = make([]float64, bs.b*p*p), make([]float64, bs.b*p)
	for i := range n {
		row, blk := z.RawRowView(i), int(bs.blockOf[i])
		g, zy := grams[blk*p*p:(blk+1)*p*p], zys[blk*p:(blk+1)*p]
		for a, va := range row {
			for c, vc := range row {
				g[a*p+c] += va * vc
			}
			zy[a] += va * y.AtVec(i)
		}
	}
	return grams, zys
}

// unstandardize solves the normal equations g·b = zy of the standardized
// design (p×p, row-major) by Cholesky, in place (LAPACK's potrf and potrs:
// no allocation a resample), and writes the coefficients of the original
// columns to beta; false when g is not positive definite (a resample that
// lost a rate's spread).
func unstandardize(g, zy, mean, sd, beta []float64) bool {
	p := len(beta)
	t, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: p, Stride: p, Data: g})
	if !ok {
		return false
	}
	lapack64.Potrs(t, blas64.General{Rows: p, Cols: 1, Stride: 1, Data: zy})
	beta[0] = zy[0]
	for j := 1; j < p; j++ {
		beta[j] = zy[j] / sd[j]
		beta[0] -= beta[j] * mean[j]
	}
	return true
}

// prefillDecodeMarkdown is report.md's "Prefill and decode energy" section.
func prefillDecodeMarkdown(p func(string, ...any), r *report.Report) {
	pd := r.PrefillDecode
	if pd == nil {
		return
	}
	p("## Prefill and decode energy (fit)\n\n")
	lags := fmt.Sprintf(", each rate at lags −%d … +%d bins (by BIC) summed", pd.LagBins, pd.LagBins)
	if pd.Refused != "" {
		lags = ""
	}
	p("GPU power per %g s bin of the formal stage regressed on the prefill and decode token rates: P = P0 + e_prefill·r_prefill + e_decode·r_decode%s (%d bins, rate correlation %s, condition number of the standardized rates %s).\n\n",
		pd.BinSeconds, lags, pd.Bins, num(pd.RateCorrelation, "%.3f"), num(pd.ConditionNumber, "%.2f"))
	if pd.Refused != "" {
		p("Refused: %s.\n\n", mdEscape(pd.Refused))
		return
	}
	p("| figure | value | 95%% CI |\n|---|---:|---:|\n")
	for _, f := range []struct {
		label, key, format string
		v                  *float64
	}{
		{"J per prefill (prompt) token", report.KeyJoulesPerPrefillToken, "%.4f", pd.JoulesPerPrefillToken},
		{"J per decode (generated) token", report.KeyJoulesPerDecodeToken, "%.4f", pd.JoulesPerDecodeToken},
		{"static power (W)", report.KeyStaticWatts, "%.1f", pd.StaticWatts},
	} {
		ci := "—"
		if v, ok := pd.CI95[f.key]; ok {
			ci = "[" + fmt.Sprintf(f.format, v[0]) + ", " + fmt.Sprintf(f.format, v[1]) + "]"
		}
		p("| %s | %s | %s |\n", f.label, num(f.v, f.format), ci)
	}
	p("\nFit: R² %s, residual std %s; intervals from a block bootstrap over the bins (blocks of %d, %d resamples, seed %d). Not the per-request attribution, which splits energy by output tokens.\n\n",
		num(pd.RSquared, "%.3f"), num(pd.ResidualStdWatts, "%.1f W"), pd.BlockLengthBins, pd.Resamples, pd.Seed)
}

// prefillDecodeSummary is the fit's summary line: each figure with its
// interval, or why it was refused.
func prefillDecodeSummary(pd *report.PrefillDecode) string {
	if pd.Refused != "" {
		return "refused: " + pd.Refused
	}
	f := func(v *float64, key, format string) string {
		s := num(v, format)
		if ci, ok := pd.CI95[key]; ok {
			s += " [" + fmt.Sprintf(format, ci[0]) + ", " + fmt.Sprintf(format, ci[1]) + "]"
		}
		return s
	}
	return f(pd.JoulesPerPrefillToken, report.KeyJoulesPerPrefillToken, "%.4f") + " / " + f(pd.JoulesPerDecodeToken, report.KeyJoulesPerDecodeToken, "%.4f") +
		", " + f(pd.StaticWatts, report.KeyStaticWatts, "%.1f") + fmt.Sprintf(" (R² %s)", num(pd.RSquared, "%.3f"))
}
