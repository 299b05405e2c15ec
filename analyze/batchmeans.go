package analyze

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// binSeries is a series of per-bin sums over a time grid of bins of width
// w from `from`: a value spread over [a, b] lands in each bin in
// proportion to the bin's share of [a, b] (O(1) per value: the bins
// strictly inside take a constant rate through a difference array).
type binSeries struct {
	from, w float64
	v, d    []float64
}

func newBinSeries(from, w float64, n int) *binSeries {
	return &binSeries{from: from, w: w, v: make([]float64, n), d: make([]float64, n+1)}
}

// bin is the bin holding x (clamped to the grid).
func (s *binSeries) bin(x float64) int { return gridBin(s.from, s.w, len(s.v), x) }

// gridBin is the bin holding x among n bins of width w from `from`
// (clamped to the grid).
func gridBin(from, w float64, n int, x float64) int {
	return min(n-1, max(0, int((x-from)/w)))
}

// add spreads x over [a, b], clamped to the grid (a value wholly outside
// it lands in the nearest bin).
func (s *binSeries) add(a, b, x float64) { s.addSpan(s.span(a, b), x) }

// binSpan is where add puts a value spread over one span: the series of
// one grid share it, so a span's bins are found once for all of them.
type binSpan struct {
	ia, ib      int     // the bins of the span's ends
	whole       bool    // the value all goes to bin ia
	d           float64 // the clamped span's length
	first, last float64 // its parts in bins ia and ib
}

// span is the bins and parts of [a, b], clamped to the grid.
func (s *binSeries) span(a, b float64) binSpan {
	end := s.from + float64(len(s.v))*s.w
	a = min(max(a, s.from), end)
	b = min(max(b, a), end)
	ia, ib := s.bin(a), s.bin(b)
	if ia == ib || !(b > a) {
		return binSpan{ia: ia, ib: ib, whole: true}
	}
	return binSpan{ia: ia, ib: ib, d: b - a, first: s.from + float64(ia+1)*s.w - a, last: b - s.from - float64(ib)*s.w}
}

// addSpan spreads x over sp, a span of a series on the same grid.
func (s *binSeries) addSpan(sp binSpan, x float64) {
	if sp.whole {
		s.v[sp.ia] += x
		return
	}
	rate := x / sp.d
	s.v[sp.ia] += rate * sp.first
	s.v[sp.ib] += rate * sp.last
	if sp.ib > sp.ia+1 {
		s.d[sp.ia+1] += rate * s.w
		s.d[sp.ib] -= rate * s.w
	}
}

// sums adds the constant parts in and returns the per-bin sums; call once,
// after the last add.
func (s *binSeries) sums() []float64 {
	run := 0.0
	for i := range s.v {
		run += s.d[i]
		s.v[i] += run
	}
	return s.v
}

// lagWindow is Politis and White's (2004; Patton, Politis and White 2009)
// flat-top lag-window estimate for a stationary series: M is the
// bandwidth (lags, 2·m̂ where m̂ is the first lag after which K_N
// autocorrelations in a row are insignificant, capped), g0 the long-run
// variance Σ λ(k/M)·γ(k) per bin and G = Σ λ(k/M)·|k|·γ(k).
type lagWindow struct {
	M     int
	g0, G float64
}

// politisWhite estimates the lag window of x; minM raises the bandwidth
// (another series' correlation scale known to drive this one's).
func politisWhite(x []float64, minM int) lagWindow {
	n := len(x)
	if n < 4 {
		return lagWindow{}
	}
	kn := max(5, int(math.Ceil(math.Sqrt(math.Log10(float64(n))))))
	// Politis–White cap the bandwidth at ⌈√n⌉ + K_N; a slow component
	// (a 20 s correlation time in 600 one-second bins) needs more, so the
	// cap is at least n/8.
	mmax := max(int(math.Ceil(math.Sqrt(float64(n))))+kn, n/8)
	maxLag := min(n-1, max(mmax+kn, 2*minM))
	acov := newAutocov(x)
	if !(acov.at(0) > 0) {
		return lagWindow{M: 1} // a constant series: nothing correlates
	}
	crit := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	mhat, run := -1, 0
	for k := 1; k <= min(mmax+kn, maxLag); k++ {
		if math.Abs(acov.at(k)/acov.at(0)) < crit {
			run++
			if run == kn {
				mhat = k - kn
				break
			}
		} else {
			run = 0
		}
	}
	if mhat < 0 {
		mhat = mmax
	}
	m := min(maxLag, max(min(2*mhat, mmax), minM))
	lw := lagWindow{M: m, g0: acov.at(0)}
	for k := 1; k <= m; k++ {
		l := flatTop(float64(k) / float64(m))
		lw.g0 += 2 * l * acov.at(k)
		lw.G += 2 * l * float64(k) * acov.at(k)
	}
	return lw
}

// flatTop is the trapezoidal flat-top lag window λ(t).
func flatTop(t float64) float64 {
	t = math.Abs(t)
	switch {
	case t <= 0.5:
		return 1
	case t <= 1:
		return 2 * (1 - t)
	}
	return 0
}

// autocovs are the autocovariances γ(k) of x about its mean (divided by
// n), each computed when first asked for: the lag window reads the lags
// up to its bandwidth, mostly far fewer than the most it may read.
type autocovs struct {
	x    []float64
	mean float64
	acov []float64 // γ(0..len−1) so far
}

func newAutocov(x []float64) *autocovs {
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	return &autocovs{x: x, mean: mean / float64(len(x))}
}

// at is γ(k), k < len(x).
func (a *autocovs) at(k int) float64 {
	for len(a.acov) <= k {
		a.acov = append(a.acov, a.lag(len(a.acov)))
	}
	return a.acov[k]
}

func (a *autocovs) lag(k int) float64 {
	x, mean := a.x, a.mean
	s := 0.0
	for t := k; t < len(x); t++ {
		s += (x[t] - mean) * (x[t-k] - mean)
	}
	return s / float64(len(x))
}

// correlationBins is G/g0, the lag window's correlation scale in bins (0
// when the series shows none, or a negative one).
func (lw lagWindow) correlationBins() float64 {
	if !(lw.g0 > 0) || !(lw.G > 0) {
		return 0
	}
	return lw.G / lw.g0
}

// batchPlan is how a series is cut into batches: B batches of about L
// bins, and the 2B batches of half that length the bias extrapolation
// compares them with.
type batchPlan struct {
	B, L int
	// H is the half batch's least length (bins): 2·H·minBatches bins give
	// the fewest batches an interval takes.
	H  int
	lw lagWindow
}

// planBatches sizes the batches from the series' lag window: the half
// length is the largest of half the MSE-optimal batch size for batch
// means, (G/g0)^(2/3)·n^(1/3) (the non-overlapping batch means' bias −G/L
// against its variance 2·g0²·L/n), the window's reach and minL (another
// series' reach); the batches are at least twice it, and no more than
// maxBatches.
func planBatches(x []float64, minM, minL int) batchPlan {
	lw := politisWhite(x, minM)
	n := float64(len(x))
	c := lw.correlationBins()
	h := max(1, float64(minL), lw.reach(), aggregateReach(x), math.Ceil(math.Pow(c, 2.0/3)*math.Cbrt(n)/2))
	b := min(maxBatches, int(n/(2*h)))
	return batchPlan{B: b, L: int(n) / max(1, b), H: int(math.Ceil(h)), lw: lw}
}

// maxBatches caps the batches: a short run's lag window can miss a slow
// correlation (its autocorrelations, biased down by the mean, drop under
// the bound early), and batches of a tenth of the run still hold it, at
// the price of Student's t with few degrees of freedom (10 to 30 batches:
// Schmeiser 1982).
const maxBatches = 10

// aggregateReach is the reach of x summed over k = 4 and 16 bins, in
// bins, while that leaves at least 40: fast noise added to a slow
// component (load-driven power beside slow thermal noise) can hide its
// autocorrelations below the significance bound at one bin, and
// summing over k averages the fast part away.
func aggregateReach(x []float64) float64 {
	r := 0.0
	for k := 4; len(x)/k >= 40 && k <= 16; k *= 4 {
		agg := make([]float64, len(x)/k)
		for i := range agg {
			agg[i] = sum(x[i*k : (i+1)*k])
		}
		r = max(r, float64(k)*politisWhite(agg, 0).reach())
	}
	return r
}

// reach is how far the series' correlation reaches, in bins: the larger
// of m̂ (the lag after which the autocorrelations stay insignificant,
// robust where the short run's G/g0 is noisy, even negative) and
// batchCorrelations times the correlation scale G/g0.
func (lw lagWindow) reach() float64 {
	return max(float64(lw.M)/2, math.Ceil(batchCorrelations*lw.correlationBins()))
}

// batchCorrelations: a half batch spans at least this many correlation
// scales.
const batchCorrelations = 1.5

// batchVariance is the variance of Σx from the plan's batches, its bias
// extrapolated away: batch means of length L estimate n·g0·(1 − c/L) for
// a correlation scale c, which a lag window truncated to a short run
// underestimates when the correlation decays slowly; with V(L) from B
// batches and V(L/2) from 2B, 2·V(L) − V(L/2) removes the 1/L term
// (Richardson extrapolation), never taken below V(L). df are the
// degrees of freedom of Student's t: B − 1, down to (B − 1)/2.5 as the
// extrapolation doubles V(L) (2·V(L) − V(L/2) varies about 2.5 times as
// much as V(L) for independent batches: Satterthwaite).
func batchVariance(x []float64, p batchPlan) (v float64, df int) {
	v = batchMeansVariance(x, p.B)
	ext := max(v, 2*v-batchMeansVariance(x, 2*p.B))
	e := 0.0
	if v > 0 {
		e = min(1, ext/v-1)
	}
	return ext, max(1, int((float64(p.B)-1)/(1+1.5*e)))
}

// batchMeansVariance is n/(b−1)·Σ(S_j − n_j·x̄)²/n_j over b consecutive
// batches (sizes differing by at most one bin): the batch means estimate
// of the variance of Σx.
func batchMeansVariance(x []float64, b int) float64 {
	n := len(x)
	mean := sum(x) / float64(n)
	ss := 0.0
	for j := range b {
		lo, hi := j*n/b, (j+1)*n/b
		s := 0.0
		for _, v := range x[lo:hi] {
			s += v - mean
		}
		ss += s * s / float64(hi-lo)
	}
	return float64(n) / float64(b-1) * ss
}

// tQuantile is Student's t quantile at q with df degrees of freedom.
func tQuantile(q float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(q)
}
