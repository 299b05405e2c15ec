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
func (s *binSeries) bin(x float64) int {
	return min(len(s.v)-1, max(0, int((x-s.from)/s.w)))
}

// add spreads x over [a, b], clamped to the grid (a value wholly outside
// it lands in the nearest bin).
func (s *binSeries) add(a, b, x float64) {
	end := s.from + float64(len(s.v))*s.w
	a = min(max(a, s.from), end)
	b = min(max(b, a), end)
	ia, ib := s.bin(a), s.bin(b)
	if ia == ib || !(b > a) {
		s.v[ia] += x
		return
	}
	rate := x / (b - a)
	s.v[ia] += rate * (s.from + float64(ia+1)*s.w - a)
	s.v[ib] += rate * (b - s.from - float64(ib)*s.w)
	if ib > ia+1 {
		s.d[ia+1] += rate * s.w
		s.d[ib] -= rate * s.w
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
// (another series' correlation scale known to drive this one's). acov is
// reused scratch.
func politisWhite(x []float64, minM int) lagWindow {
	n := len(x)
	if n < 4 {
		return lagWindow{}
	}
	kn := max(5, int(math.Ceil(math.Sqrt(math.Log10(float64(n))))))
	mmax := int(math.Ceil(math.Sqrt(float64(n)))) + kn
	maxLag := min(n-1, max(mmax+kn, 2*minM))
	acov := autocov(x, maxLag)
	crit := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	mhat, run := -1, 0
	for k := 1; k <= min(mmax+kn, maxLag); k++ {
		if acov[0] > 0 && math.Abs(acov[k]/acov[0]) < crit {
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
	m := max(min(2*mhat, mmax), min(minM, maxLag))
	lw := lagWindow{M: m, g0: acov[0]}
	for k := 1; k <= m; k++ {
		l := flatTop(float64(k) / float64(m))
		lw.g0 += 2 * l * acov[k]
		lw.G += 2 * l * float64(k) * acov[k]
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

// autocov is the autocovariances γ(0..maxLag) of x about its mean
// (divided by n).
func autocov(x []float64, maxLag int) []float64 {
	n := len(x)
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	out := make([]float64, maxLag+1)
	for k := range out {
		s := 0.0
		for t := k; t < n; t++ {
			s += (x[t] - mean) * (x[t-k] - mean)
		}
		out[k] = s / float64(n)
	}
	return out
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
// bins.
type batchPlan struct {
	B, L int
	lw   lagWindow
}

// planBatches sizes the batches from the series' lag window: L is the
// larger of the MSE-optimal batch size for batch means, (G/g0)^(2/3)·n^(1/3)
// (the non-overlapping batch means' bias −G/L against its variance
// 2·g0²·L/n), and batchCorrelations times the correlation scale G/g0, so
// that adjacent batches share little and the bias correction stays small.
func planBatches(x []float64, minM int) batchPlan {
	lw := politisWhite(x, minM)
	n := float64(len(x))
	c := lw.correlationBins()
	l := max(1, math.Ceil(math.Pow(c, 2.0/3)*math.Cbrt(n)), math.Ceil(batchCorrelations*c))
	return batchPlan{B: int(n / l), L: int(l), lw: lw}
}

// batchCorrelations: a batch spans at least this many correlation scales.
const batchCorrelations = 3

// batchVariance is the variance of Σx estimated from B consecutive batches
// (sizes differing by at most one bin): B/(B−1)·Σ(S_b − n_b·x̄)² plus
// B·G, the first-order correction of the batches' own correlation
// (E[B/(B−1)·Σ(S_b−S̄)²] = n·g0 − (B+1)·G while Var Σx = n·g0 − G; G taken
// ≥ 0, so the correction never narrows).
func batchVariance(x []float64, p batchPlan) float64 {
	n := len(x)
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	ss := 0.0
	for b := range p.B {
		lo, hi := b*n/p.B, (b+1)*n/p.B
		s := 0.0
		for _, v := range x[lo:hi] {
			s += v - mean
		}
		ss += s * s
	}
	return float64(p.B)/float64(p.B-1)*ss + float64(p.B)*max(0, p.lw.G)
}

// tQuantile is Student's t quantile at q with df degrees of freedom.
func tQuantile(q float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(q)
}
