package exporter

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
)

// listerFunc is an AllocationLister of fixed allocations.
type listerFunc func() []podresources.Allocation

func (f listerFunc) List(context.Context) ([]podresources.Allocation, error) { return f(), nil }

// TestKubeletUpOnlyWithAllocations: a scrape during a refresh never sees
// joulemark_kubelet_up 1 without the allocations that read brought (the
// cause of TestExporterSimAllocations' flakes: up was set before the rows).
// The refresh is held between its two halves by a checkpoint that is a
// FIFO nobody writes yet (read because GPU 0 is shared).
func TestKubeletUpOnlyWithAllocations(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	u := sim.Devices()[0].UUID
	fifo := filepath.Join(t.TempDir(), "checkpoint")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := newAttributor(PodConfig{Checkpoint: fifo, ProcRoot: t.TempDir(), Lister: listerFunc(func() []podresources.Allocation {
		return []podresources.Allocation{alloc("serve", "a", u), alloc("serve", "b", u)}
	})}, sim, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := newPodCollector(a)
	done := make(chan struct{})
	go func() { a.refresh(context.Background()); close(done) }()
	// Scrape while the refresh waits on the checkpoint (bounded polling).
	for range 50 {
		if up, rows := podScrape(t, c); up == 1 && rows == 0 {
			t.Fatal("joulemark_kubelet_up 1 served without the allocations read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // lets the refresh read EOF
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-done
	if up, rows := podScrape(t, c); up != 1 || rows != 2 {
		t.Errorf("after the refresh: kubelet_up %v with %d allocation rows, want 1 with 2", up, rows)
	}
}

// podScrape collects c: kubelet_up and the number of allocation rows.
func podScrape(t *testing.T, c *podCollector) (up float64, rows int) {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		switch m.Desc() {
		case c.up:
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			up = pb.GetGauge().GetValue()
		case c.alloc:
			rows++
		}
	}
	return up, rows
}
