package production

import (
	"math/rand/v2"
	"testing"

	"github.com/prometheus/common/model"
)

// TestDecodeAsCompute: the series decoded as they stream in give what the
// Series path gives, bit for bit: counterOf is newCounter, counterDelta is
// the counter's delta (bounds before, on, between and after the samples,
// resets), clip is inRange's prefix.
func TestDecodeAsCompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + rng.IntN(12)
		pairs := make([]model.SamplePair, n)
		samples := make([]Sample, n)
		ms, v := int64(1_000_000+rng.IntN(5)*1000), rng.Float64()*100
		for i := range pairs {
			ms += int64(1+rng.IntN(3)) * 1000
			if rng.IntN(6) == 0 {
				v = rng.Float64() * 10 // a reset
			} else {
				v += rng.Float64() * 37.3
			}
			pairs[i] = model.SamplePair{Timestamp: model.Time(ms), Value: model.SampleValue(v)}
			samples[i] = Sample{T: float64(ms) / 1000, V: v}
		}
		c, want := counterOf(pairs), newCounter(samples)
		for i := range want.t {
			if c.t[i] != want.t[i] || c.cum[i] != want.cum[i] {
				t.Fatalf("counterOf %v: sample %d is (%v, %v), newCounter's (%v, %v)", pairs, i, c.t[i], c.cum[i], want.t[i], want.cum[i])
			}
		}
		first, last := samples[0].T, samples[n-1].T
		bounds := []float64{first - 1, first, first + 0.5, last, last + 2, samples[n/2].T, samples[n/2].T + 0.25}
		for _, a := range bounds {
			for _, b := range bounds {
				if a > b {
					continue
				}
				if got, w := counterDelta(pairs, a, b), want.delta(a, b); got != w {
					t.Fatalf("counterDelta(%v, %v, %v) = %v, the counter's %v", pairs, a, b, got, w)
				}
			}
			d := &Data{To: a}
			var ser []Series
			if got := d.clip(pairs); len(got) > 0 {
				ser = []Series{{Samples: toSamples(got)}}
			}
			if w := d.inRangeOf(samples); len(w) != len(ser) || len(w) == 1 && len(w[0].Samples) != len(ser[0].Samples) {
				t.Fatalf("clip at %v: %v, inRange's %v", a, ser, w)
			}
		}
	}
}

// inRangeOf is the former Data.inRange of one series: its samples up to
// its first one past To, none when it starts after To.
func (d *Data) inRangeOf(samples []Sample) []Series {
	ser := Series{}
	for _, p := range samples {
		if n := len(ser.Samples); n > 0 && ser.Samples[n-1].T > d.To {
			break
		}
		ser.Samples = append(ser.Samples, p)
	}
	if len(ser.Samples) > 0 && ser.Samples[0].T <= d.To {
		return []Series{ser}
	}
	return nil
}
