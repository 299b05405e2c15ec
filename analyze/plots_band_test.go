package analyze

import (
	"math"
	"testing"
)

// TestSteadyBandEnds: the per-request plot's steady-state band ends at the
// steady state's last request, not at the last request plotted.
func TestSteadyBandEnds(t *testing.T) {
	pd := &PlotData{JoulesPerToken: make([]float64, 100), SteadyFirst: 10, SteadyLast: 60, SteadyJoulesPerToken: 1}
	for i := range pd.JoulesPerToken {
		pd.JoulesPerToken[i] = 1 + 0.01*math.Sin(float64(i))
	}
	if got := steadyEnd(pd); got != 60 {
		t.Errorf("band ends at request %d, want 60 (the steady state's last)", got)
	}
	if _, err := jptPlot(pd); err != nil {
		t.Fatal(err)
	}
	pd.SteadyLast = 500 // never past the plotted requests
	if got := steadyEnd(pd); got != 99 {
		t.Errorf("band ends at %d, want 99", got)
	}
}
