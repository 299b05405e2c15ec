package gpu

import (
	"testing"
	"time"
)

// BenchmarkSimSample is the cost of one simulated GPU sample.
func BenchmarkSimSample(b *testing.B) {
	clk := newClock()
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

// BenchmarkNVMLMockSample is the exporter-side cost of one NVML sample
// (batched field values, decoding, checks) against go-nvml's mock; the
// driver's own time is not in it.
func BenchmarkNVMLMockSample(b *testing.B) {
	nv, err := NewNVML(mockServer(healthyGPUs(8)), NVMLOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer nv.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := nv.Sample(i % 8); err != nil {
			b.Fatal(err)
		}
	}
}
