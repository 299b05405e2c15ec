package analyze

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// shiftRun moves every timestamp of d by dt seconds.
func shiftRun(d *RunData, dt float64) {
	for name, b := range d.Phases {
		b.Start, b.End = b.Start+dt, b.End+dt
		d.Phases[name] = b
	}
	shift := func(ss []Sample) {
		for i := range ss {
			ss[i].T += dt
		}
	}
	for i := range d.GPUs {
		g := &d.GPUs[i]
		shift(g.Energy)
		shift(g.Power)
		shift(g.Memory)
		shift(g.Utilization)
	}
	for i := range d.Requests {
		r := &d.Requests[i]
		r.Send, r.End = r.Send+dt, r.End+dt
	}
	for _, series := range d.Engine.Series {
		for _, s := range series {
			shift(s)
		}
	}
	for _, c := range d.Host.Counters {
		shift(c)
	}
}

// TestWaitForFinalSamples: analyze right after the run, while Prometheus
// lacks its last energy samples, waits (bounded by Config.Wait) until they
// arrive and then reports full coverage and how long it waited; without the
// wait the same moment gives a coverage gap at the run's end.
func TestWaitForFinalSamples(t *testing.T) {
	s := startPromserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := fixture()
	shiftRun(d, float64(time.Now().Unix()-200)-fixtureBase) // the run ended 60 s ago
	end := d.Phases["release"].End
	isLate := func(x remotewrite.Sample) bool {
		n := x.Labels["__name__"]
		return (n == contract.GPUEnergy || n == contract.GPUPower) && float64(x.TimestampMs)/1000 > end-3
	}
	all := fixtureSamples(d)
	late := slices.Clone(all)
	late = slices.DeleteFunc(late, func(x remotewrite.Sample) bool { return !isLate(x) })
	if err := s.AppendSamples(ctx, slices.DeleteFunc(all, isLate)); err != nil {
		t.Fatal(err)
	}
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), QueryTimeout: 30 * time.Second, ReadAPI: remoteread.Query}
	r, _, err := Analyze(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Measurement.WaitedSeconds != nil || r.Measurement.CoverageRatio == nil || *r.Measurement.CoverageRatio == 1 {
		t.Fatalf("without the wait: waited %v, coverage %v; want a gap at the end", fmtPtr(r.Measurement.WaitedSeconds), fmtPtr(r.Measurement.CoverageRatio))
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		if err := s.AppendSamples(ctx, late); err != nil {
			t.Error(err)
		}
	}()
	cfg.Wait = 20 * time.Second
	r, _, err = Analyze(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Measurement.WaitedSeconds == nil || r.Measurement.CoverageRatio == nil || *r.Measurement.CoverageRatio != 1 {
		t.Errorf("with the wait: waited %v, coverage %v; want a wait and full coverage", fmtPtr(r.Measurement.WaitedSeconds), fmtPtr(r.Measurement.CoverageRatio))
	}
}
