package analyze

import (
	"context"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/report"
)

// otherHost copies the fixture's GPU series to a second exporter instance
// that reports the same UUIDs (cloned VMs, simulated exporters): twice as
// dense and three times the power, and without the run.
func otherHost(samples []remotewrite.Sample) []remotewrite.Sample {
	var out []remotewrite.Sample
	for _, s := range samples {
		switch s.Labels["__name__"] {
		case contract.GPUEnergy, contract.GPUPower, contract.GPUInfo, contract.GPUUtilization, contract.GPUMemoryUsed:
		default:
			continue
		}
		for _, dt := range []int64{0, 500} {
			l := map[string]string{}
			for k, v := range s.Labels {
				l[k] = v
			}
			l["instance"] = "other-host:9400"
			v := s.Value
			if n := l["__name__"]; n == contract.GPUEnergy || n == contract.GPUPower {
				v *= 3
			}
			out = append(out, remotewrite.Sample{Labels: l, Value: v, TimestampMs: s.TimestampMs + dt})
		}
	}
	return out
}

// TestGPUNamedByHost: another exporter reports the run's GPU UUIDs with
// other figures (denser, so a join by UUID alone would keep its series);
// the report counts only the run's host's GPUs and equals the fixture's.
func TestGPUNamedByHost(t *testing.T) {
	s := startPromserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := fixture()
	samples := fixtureSamples(d)
	samples = append(samples, otherHost(samples)...)
	// both hosts push raw energy samples under their host names: which is
	// the run's is not known, so neither is used
	for _, g := range d.GPUs {
		for _, e := range g.Energy {
			for host, f := range map[string]float64{"host-a": 3, "host-b": 2} {
				for _, dt := range []int64{0, 500} { // denser than the scrapes: preferred if taken
					samples = append(samples, remotewrite.Sample{Value: f * e.V, TimestampMs: int64(e.T*1000) + dt, Labels: map[string]string{
						"__name__": contract.GPUEnergySample, "gpu": g.GPU, "uuid": g.UUID, "instance": host, "job": "joulemark-exporter"}})
				}
			}
		}
	}
	if err := s.AppendSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	r := analyzeFixture(t, s.URL())
	js, err := report.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fixtureReport(t)
	wantJS, _ := report.Marshal(want)
	sameJSON(t, js, wantJS)
}
