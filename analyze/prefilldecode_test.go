package analyze

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/gpu"
)

// pdWorkload draws the requests of a synthetic formal stage.
type pdWorkload func(rng *rand.Rand, from, to float64) []Request

// pdRun is a formal stage of the given length on nGPU GPUs drawing the
// simulator's power model (gpu.DefaultSimPower) in 10 ms steps: idle,
// plus ActiveWatts while any request is in flight, plus each prefilled
// and decoded token's energy in the step it is processed, plus gaussian
// noise of noiseW per GPU and 100 ms counter sample; with tau > 0 the power
// follows that with a first-order lag of time constant tau (the demo's
// simulated GPUs ramp so). A request's prompt is
// prefilled over the last fifth of its time to first token (not spread
// uniformly, as the fit assumes) and its tokens are decoded one per TPOT.
func pdRun(t *testing.T, nGPU int, formal, noiseW, tau float64, work pdWorkload) *RunData {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 5))
	from := fixtureBase
	to := from + formal
	d := &RunData{RunID: "pd", Phases: map[string]PhaseBounds{"formal": {Start: from, End: to, HasStart: true, HasEnd: true}}}
	d.Requests = work(rng, from, to)
	const dt = 0.01
	o := from - 12 // before the first send
	n := int(math.Ceil((to-o+1)/dt)) + 1
	prefill, decode, busy := make([]float64, n), make([]float64, n), make([]bool, n)
	step := func(x float64) int { return max(0, int(math.Floor((x-o)/dt))) }
	for _, q := range d.Requests {
		p0 := q.Send + 0.8*(q.FirstToken-q.Send)
		for k := step(q.Send); k <= step(q.End) && k < n; k++ {
			busy[k] = true
		}
		for k := step(p0); k <= step(q.FirstToken) && k < n; k++ {
			a, b := o+float64(k)*dt, o+float64(k+1)*dt
			prefill[k] += float64(q.InputTokens) * max(0, min(b, q.FirstToken)-max(a, p0)) / (q.FirstToken - p0)
		}
		tpot := (q.End - q.FirstToken) / float64(max(1, q.OutputTokens-1))
		for j := range q.OutputTokens {
			if k := step(q.FirstToken + float64(j)*tpot); k < n {
				decode[k]++
			}
		}
	}
	sp := gpu.DefaultSimPower()
	for g := range nGPU {
		gs := GPUSeries{GPU: fmt.Sprint(g), UUID: fmt.Sprintf("GPU-%d", g), EnergySource: "counter"}
		c, lagged := 0.0, sp.IdleWatts
		for k := range n {
			if k%10 == 0 {
				gs.Energy = append(gs.Energy, Sample{o + float64(k)*dt, c})
				c += rng.NormFloat64() * noiseW * 0.1
			}
			w := sp.IdleWatts + (sp.PrefillJoulesPerToken*prefill[k]+sp.DecodeJoulesPerToken*decode[k])/dt
			if busy[k] {
				w += sp.ActiveWatts
			}
			if tau > 0 {
				lagged += (w - lagged) * (1 - math.Exp(-dt/tau))
				w = lagged
			}
			c += w * dt
		}
		d.GPUs = append(d.GPUs, gs)
	}
	return d
}

// newPDRequest is one request sent at send: TTFT 30 ms + 50 µs per prompt
// token, then one token per 20 ms.
func newPDRequest(send float64, in, out int64) Request {
	ttft := 0.03 + 50e-6*float64(in)
	lat := ttft + 0.02*float64(out-1)
	return Request{Formal: true, Success: true, HasTTFT: true, Send: send, FirstToken: send + ttft, End: send + lat,
		TTFT: ttft, Latency: lat, InputTokens: in, OutputTokens: out}
}

// varyingWorkload is open-loop Poisson arrivals whose rate, prompt and
// answer lengths change independently every 8 s.
func varyingWorkload(rng *rand.Rand, from, to float64) []Request {
	var out []Request
	for p := from - 10; p < to; p += 8 {
		rate := 2 + 6*rng.Float64()
		in, o := 100+rng.Float64()*1900, 20+rng.Float64()*280
		for x := p + rng.ExpFloat64()/rate; x < p+8; x += rng.ExpFloat64() / rate {
			out = append(out, newPDRequest(x, int64(in*(0.9+0.2*rng.Float64())), int64(o*(0.9+0.2*rng.Float64()))))
		}
	}
	return out
}

// closedLoopWorkload is 16 slots, each sending the same request as soon as
// its last one ended: a constant workload.
func closedLoopWorkload(rng *rand.Rand, from, to float64) []Request {
	var out []Request
	for range 16 {
		for x := from - 10 + 3*rng.Float64(); x < to; {
			q := newPDRequest(x, 400, 150)
			out = append(out, q)
			x = q.End
		}
	}
	return out
}

func fitOf(d *RunData) *PrefillDecode {
	c := &computation{d: d, r: &Report{}}
	c.counterCurves()
	c.prefillDecode()
	return c.r.PrefillDecode
}

// TestPrefillDecodeFitSimModel fits a run drawing the simulator's power
// model: the coefficients come back within 5% (the static power within
// 2%), each inside its interval; within 10% when the power lags behind the
// tokens with a 1.5 s time constant (the lags the fit takes absorb most of
// it).
func TestPrefillDecodeFitSimModel(t *testing.T) {
	for _, tau := range []float64{0, 1.5} {
		tol := 0.05
		if tau > 0 {
			tol = 0.10
		}
		t.Run(fmt.Sprintf("lag %g s", tau), func(t *testing.T) { testPrefillDecodeFit(t, tau, tol) })
	}
}

func testPrefillDecodeFit(t *testing.T, tau, tol float64) {
	const nGPU = 2
	pd := fitOf(pdRun(t, nGPU, 300, 20, tau, varyingWorkload))
	if pd.Refused != "" {
		t.Fatalf("refused: %s (%+v)", pd.Refused, pd)
	}
	sp := gpu.DefaultSimPower()
	for _, c := range []struct {
		key       string
		got       *float64
		want, tol float64
	}{
		{KeyJoulesPerPrefillToken, pd.JoulesPerPrefillToken, nGPU * sp.PrefillJoulesPerToken, tol},
		{KeyJoulesPerDecodeToken, pd.JoulesPerDecodeToken, nGPU * sp.DecodeJoulesPerToken, tol},
		{KeyStaticWatts, pd.StaticWatts, nGPU * (sp.IdleWatts + sp.ActiveWatts), 0.02},
	} {
		ci, ok := pd.CI95[c.key]
		if c.got == nil || !ok {
			t.Fatalf("%s: %v, interval %v", c.key, c.got, ok)
		}
		t.Logf("%s = %.4f [%.4f, %.4f], want %.4f", c.key, *c.got, ci[0], ci[1], c.want)
		if math.Abs(*c.got-c.want) > c.tol*c.want {
			t.Errorf("%s = %.4f, want %.4f within %.0f%%", c.key, *c.got, c.want, 100*c.tol)
		}
		if !(ci[0] <= *c.got && *c.got <= ci[1]) || ci[1]-ci[0] > c.want {
			t.Errorf("%s interval [%g, %g] around %g", c.key, ci[0], ci[1], *c.got)
		}
	}
	// Bins with a moment of no request in flight are left out.
	if pd.RSquared == nil || *pd.RSquared < 0.9 || pd.Bins < 250 || pd.Bins >= 300 {
		t.Errorf("R² %v over %d bins, want above 0.9 over 250..299", pd.RSquared, pd.Bins)
	}
	var md, sum bytes.Buffer
	r := &Report{PrefillDecode: pd}
	if err := WriteMarkdown(&md, r); err != nil || !strings.Contains(md.String(), "| J per decode (generated) token | "+fmt.Sprintf("%.4f", *pd.JoulesPerDecodeToken)) {
		t.Errorf("report.md lacks the decode row (%v):\n%s", err, md.String())
	}
	if err := WriteSummary(&sum, r); err != nil || !strings.Contains(sum.String(), fmt.Sprintf("%.4f [", *pd.JoulesPerPrefillToken)) {
		t.Errorf("summary lacks the prefill figure (%v):\n%s", err, sum.String())
	}
	t.Logf("bins %d, correlation %.3f, condition %.1f, R² %.4f, residual std %.1f W, block %d", pd.Bins, *pd.RateCorrelation, *pd.ConditionNumber, *pd.RSquared, *pd.ResidualStdWatts, pd.BlockLengthBins)
}

// TestPrefillDecodeFitRefused: a closed loop of identical requests moves
// neither rate enough, and a short stage has too few bins.
func TestPrefillDecodeFitRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		formal float64
		work   pdWorkload
		want   string
	}{
		{"constant workload", 300, closedLoopWorkload, "move together"},
		{"short stage", 20, varyingWorkload, "fewer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pd := fitOf(pdRun(t, 2, tc.formal, 20, 0, tc.work))
			if !strings.Contains(pd.Refused, tc.want) || pd.JoulesPerDecodeToken != nil || pd.CI95 != nil {
				t.Fatalf("refused %q, decode %v, want refused for %q and no figures", pd.Refused, pd.JoulesPerDecodeToken, tc.want)
			}
			var md bytes.Buffer
			if err := WriteMarkdown(&md, &Report{PrefillDecode: pd}); err != nil || !strings.Contains(md.String(), "Refused: "+pd.Refused) {
				t.Errorf("report.md lacks the refusal (%v):\n%s", err, md.String())
			}
			t.Logf("refused: %s", pd.Refused)
		})
	}
}

// TestPrefillDecodeRefusalConditions crafts bins for the two conditions a
// varying workload can still fail: a decode rate that barely moves (the
// condition number) and rates that move too little for the noise (an
// interval reaching 0).
func TestPrefillDecodeRefusalConditions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		decodeCV, sdW float64
		want          string
		wantCondAbove float64
		wantCondBelow float64
	}{
		{"decode barely moves", 0.02, 10, "condition number", maxFitCondition, math.Inf(1)},
		{"noise drowns decode", 0.20, 400, "decode energy's 95% interval", 0, maxFitCondition},
		{"separable", 0.30, 10, "", 0, maxFitCondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(8, 9))
			const n = 200
			b := &fitBins{power: make([]float64, n), prefill: make([]float64, n), decode: make([]float64, n), width: 1}
			rows := make([]int, n)
			for i := range n {
				rows[i] = i
				b.prefill[i] = 5000 * rng.Float64()
				b.decode[i] = 2000 * (1 + tc.decodeCV*rng.NormFloat64())
				b.power[i] = 540 + 0.04*b.prefill[i] + 0.09*b.decode[i] + tc.sdW*rng.NormFloat64()
			}
			pd := &PrefillDecode{BinSeconds: 1}
			fitPrefillDecode(pd, b, rows, 4)
			t.Logf("condition %.1f, refused %q", *pd.ConditionNumber, pd.Refused)
			if c := *pd.ConditionNumber; !(c > tc.wantCondAbove && c < tc.wantCondBelow) {
				t.Errorf("condition number %.1f, want in (%g, %g)", c, tc.wantCondAbove, tc.wantCondBelow)
			}
			if tc.want == "" {
				if pd.Refused != "" || pd.JoulesPerDecodeToken == nil || math.Abs(*pd.JoulesPerDecodeToken-0.09) > 0.01 {
					t.Errorf("refused %q, decode %v, want about 0.09", pd.Refused, pd.JoulesPerDecodeToken)
				}
				return
			}
			if !strings.Contains(pd.Refused, tc.want) || pd.JoulesPerPrefillToken != nil || pd.StaticWatts != nil || pd.CI95 != nil {
				t.Errorf("refused %q with prefill %v, static %v, intervals %v: want refused for %q and no figures", pd.Refused, pd.JoulesPerPrefillToken, pd.StaticWatts, pd.CI95, tc.want)
			}
		})
	}
}
