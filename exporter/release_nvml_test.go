//go:build cgo

package exporter

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/nvmlmock"
)

// TestReleaseNVML: SIGUSR1 (handleReleaseSignal) shuts NVML down and no
// GPU read reaches it until SIGUSR2; every GPU of the run in progress gets
// an open gap of its own meanwhile, and after the re-acquire the GPUs are
// read again, the gaps end and the energy advances again.
func TestReleaseNVML(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	var shutdowns, reads atomic.Int32
	shutdown := m.srv.ShutdownFunc
	m.srv.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return shutdown() }
	for i := range m.srv.Devices {
		dev := nvmlmock.Device(m.srv, i)
		read := dev.GetFieldValuesFunc
		dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return { reads.Add(1); return read(fv) }
	}
	r, err := NewReleasable(func() (gpu.Backend, error) { return gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk}) })
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: r, Clock: clk, APIToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	step := func(d time.Duration) {
		for range int(d / e.cfg.Interval) {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	e.SampleOnce()
	e.mu.Lock()
	if _, _, err := e.lc.StartPhase("up", contract.Idle, e.off(clk.Now()), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	e.mu.Unlock()
	step(2 * time.Second)
	log := e.log
	handleReleaseSignal(r, syscall.SIGUSR1, log)
	if shutdowns.Load() != 1 || !r.Released() {
		t.Fatalf("after SIGUSR1: %d NVML shutdowns, released %v; want 1 and released", shutdowns.Load(), r.Released())
	}
	before, energy := reads.Load(), gatheredEnergy(t, e)
	step(2 * time.Second)
	e.SampleSlowOnce()
	if n := reads.Load() - before; n != 0 {
		t.Errorf("%d NVML reads while released, want none", n)
	}
	if got := gatheredEnergy(t, e); got != energy {
		t.Errorf("energy %.3f J while released, want %.3f J (nothing measured)", got, energy)
	}
	checkReleaseGaps(t, e, true)
	handleReleaseSignal(r, syscall.SIGUSR2, log)
	step(2 * time.Second)
	if r.Released() || reads.Load() == before {
		t.Fatalf("after SIGUSR2: released %v, %d reads; want re-acquired and read", r.Released(), reads.Load()-before)
	}
	if got := gatheredEnergy(t, e); got <= energy {
		t.Errorf("energy %.3f J after the re-acquire, want above %.3f J", got, energy)
	}
	checkReleaseGaps(t, e, false)
}

// checkReleaseGaps checks that run "up" has a gap for each GPU, open or
// ended as open says.
func checkReleaseGaps(t *testing.T, e *Exporter, open bool) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	gaps := e.lc.runs["up"].gaps
	if len(gaps) != len(e.gpus) {
		t.Fatalf("gaps %+v: want one per GPU (%d)", gaps, len(e.gpus))
	}
	for _, g := range gaps {
		if g.Reason != contract.GapGPUFailed || g.Open != open || len(g.GPUs) != 1 {
			t.Errorf("gap %+v: want reason %s, open %v, one GPU", g, contract.GapGPUFailed, open)
		}
	}
}
