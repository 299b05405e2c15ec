package exporter

import (
	"math"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
)

// TestScrapeIsOneSnapshot: a scrape renders the state of one instant while
// the samplers run: on a steady simulated GPU every scrape's energy counter
// is its power times the time its sample count spans, which a scrape taking
// the count and the energy from two different samples would break.
func TestScrapeIsOneSnapshot(t *testing.T) {
	clk := newFakeClock()
	const iv = 100 * time.Millisecond
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 4, Clock: clk}) // no noise: a steady idle power
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Clock: clk, Interval: iv})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SampleOnce()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for range 1_000_000 {
			select {
			case <-stop:
				return
			default:
			}
			clk.Advance(iv)
			e.SampleOnce()
		}
	}()
	defer func() { close(stop); <-done }()
	bad := 0
	for range 300 {
		mfs, err := e.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		v := map[string][]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case contract.GPUEnergy:
					v["e"] = append(v["e"], m.GetCounter().GetValue())
				case contract.SamplerSamples:
					v["n"] = append(v["n"], m.GetCounter().GetValue())
				case contract.GPUPower:
					v["p"] = append(v["p"], m.GetGauge().GetValue())
				}
			}
		}
		for i := range v["e"] {
			want := v["p"][i] * iv.Seconds() * (v["n"][i] - 1)
			if math.Abs(v["e"][i]-want) > 1e-6*max(1, want) {
				if bad++; bad <= 3 {
					t.Errorf("GPU %d: energy %.3f J after %.0f samples at %.3f W, want %.3f J: the scrape mixes two instants",
						i, v["e"][i], v["n"][i], v["p"][i], want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d inconsistent GPU series in 300 scrapes", bad)
	}
}
