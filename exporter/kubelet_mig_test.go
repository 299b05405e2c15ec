package exporter

import (
	"context"
	"math"
	"testing"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
)

// TestPodMIGIDFormsAndLayout: GPU 2 of go-nvml's mock has MIG instances
// of 42, 14 and 42 SMs; pod x holds the first by an old-style id
// (MIG-GPU-<uuid>/1/0), pod y the second by an index-strategy id (2:1).
// Each weighs its instance's size: x 42/98, y 14/98, 42/98 unallocated.
// When the third instance is destroyed (nothing else changes), the next
// refresh splits by the new layout: x 42/56, y 14/56, none unallocated.
// Fails with old-style ids weighing 1, index ids refused, or the sizes
// kept from the first listing.
func TestPodMIGIDFormsAndLayout(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	sms := []uint32{42, 14, 42}
	migMockLive(t, m, &sms)
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	fake, cli := fakeKubelet(t, "nvidia.com/gpu", "nvidia.com/mig-*")
	e, err := newExp(Config{Backend: b, Clock: clk, Pods: &PodConfig{Lister: cli, Checkpoint: "/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	mig := func(pod, id string) podresources.Allocation {
		return podresources.Allocation{Namespace: "batch", Pod: pod, Container: "main", Resource: "nvidia.com/mig-3g.40gb", DeviceID: id}
	}
	fake.Set([]podresources.Allocation{mig("x", "MIG-"+e.gpus[2].dev.UUID+"/1/0"), mig("y", "2:1")})
	r := &podRig{t: t, clk: clk, e: e}
	run := func() (de, x, y, un float64) {
		e.attr.refresh(context.Background())
		e.attr.splitByProcess()
		x0, _ := r.value("joulemark_pod_energy_joules_total", "pod", "x")
		y0, _ := r.value("joulemark_pod_energy_joules_total", "pod", "y")
		u0, _ := r.value("joulemark_unallocated_energy_joules_total", "gpu", "2")
		before := e.gpus[2].energy
		for range 20 {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
		x, _ = r.value("joulemark_pod_energy_joules_total", "pod", "x")
		y, _ = r.value("joulemark_pod_energy_joules_total", "pod", "y")
		un, _ = r.value("joulemark_unallocated_energy_joules_total", "gpu", "2")
		return e.gpus[2].energy - before, x - x0, y - y0, un - u0
	}
	e.SampleOnce()
	de, x, y, un := run()
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*de }
	if de <= 0 || !near(x, de*42/98) || !near(y, de*14/98) || !near(un, de*42/98) {
		t.Errorf("MIG split by id forms: x %.4f J, y %.4f J, unallocated %.4f J of GPU 2's %.4f J; want 42/98, 14/98, 42/98", x, y, un, de)
	}
	sms = sms[:2] // the third instance destroyed
	de, x, y, un = run()
	if !near(x, de*42/56) || !near(y, de*14/56) || !near(un, 0) {
		t.Errorf("after the layout change: x %.4f J, y %.4f J, unallocated %.4f J of %.4f J; want 42/56, 14/56, 0", x, y, un, de)
	}
}
