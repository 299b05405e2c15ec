package gpu

import (
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
)

// BenchmarkSimSample is the cost of one simulated GPU sample.
func BenchmarkSimSample(b *testing.B) {
	clk := fakeclock.New()
	s, _ := NewSim(SimConfig{GPUs: 8, NoiseWatts: 1, Clock: clk})
	s.SetLoad(0.5)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		clk.Advance(time.Millisecond)
		if _, err := s.Sample(i % 8); err != nil {
			b.Fatal(err)
		}
	}
}
