package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/joulemark/joulemark/internal/gpu"
)

// A driver upgrade (the GPU operator's in-place upgrade, or a manual
// rmmod/modprobe) cannot unload the kernel module while a process holds
// NVML, and the operator's drain skips DaemonSets. The exporter lets go of
// NVML on SIGUSR1 (nvmlShutdown: no NVML call until told again) and takes
// it again on SIGUSR2 (nvmlInit and every GPU reopened). While released,
// every GPU's reads fail with errReleased, so every active run gets the gap
// of a failed GPU (gpufail.go) from its last good sample; when NVML is back
// and every GPU answers with the same UUID at the same index, the gaps end
// and measurement resumes (docs/deploy.md, "Driver upgrades").

// errReleased is every read's answer while NVML is released.
var errReleased = errors.New("NVML released for a driver upgrade (SIGUSR1); not measured until re-acquired (SIGUSR2)")

// Releasable is a GPU backend that can be released (closed) and re-acquired
// (reopened) while the exporter runs. It forwards the process and MIG
// reads of the backend it wraps.
type Releasable struct {
	mu     sync.RWMutex // held shared by every read, exclusively to swap b
	open   func() (gpu.Backend, error)
	b      gpu.Backend // nil while released
	devs   []gpu.Device
	closed bool
}

// NewReleasable opens the backend with open, which re-acquire calls again.
func NewReleasable(open func() (gpu.Backend, error)) (*Releasable, error) {
	b, err := open()
	if err != nil {
		return nil, err
	}
	return &Releasable{open: open, b: b, devs: b.Devices()}, nil
}

// Release closes the backend (NVML's shutdown) once the reads in flight
// returned; reads answer errReleased until Reacquire. Releasing a released
// backend does nothing.
func (r *Releasable) Release() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b == nil {
		return nil
	}
	b := r.b
	r.b = nil
	if err := b.Close(); err != nil {
		return fmt.Errorf("releasing the GPU backend: %w", err)
	}
	return nil
}

// Reacquire reopens the backend. Every GPU must come back with the UUID it
// had at its index (the runs' energy is per GPU); else the new backend is
// closed and the GPUs stay released.
func (r *Releasable) Reacquire() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("re-acquiring the GPU backend: the exporter is closing")
	}
	if r.b != nil {
		return nil
	}
	b, err := r.open()
	if err != nil {
		return fmt.Errorf("re-acquiring the GPU backend: %w", err)
	}
	if was, now := uuids(r.devs), uuids(b.Devices()); !slices.Equal(was, now) {
		_ = b.Close()
		return fmt.Errorf("re-acquiring the GPU backend: GPUs %v, want %v as before the release; staying released", now, was)
	}
	r.b = b
	return nil
}

// uuids lists the GPUs' UUIDs by index.
func uuids(devs []gpu.Device) []string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d.UUID
	}
	return out
}

// Released says whether the backend is released.
func (r *Releasable) Released() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.b == nil
}

// Devices lists the GPUs (as at the start while released).
func (r *Releasable) Devices() []gpu.Device {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.b == nil {
		return slices.Clone(r.devs)
	}
	return r.b.Devices()
}

// Sample reads GPU i's power, or answers errReleased.
func (r *Releasable) Sample(i int) (gpu.Sample, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.b == nil {
		return gpu.Sample{}, errReleased
	}
	return r.b.Sample(i)
}

// SlowSample reads GPU i's slow metrics, or answers errReleased.
func (r *Releasable) SlowSample(i int) (gpu.SlowSample, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.b == nil {
		return gpu.SlowSample{}, errReleased
	}
	return r.b.SlowSample(i)
}

// ProcessSM forwards to the backend's gpu.ProcessReader.
func (r *Releasable) ProcessSM(i int) ([]gpu.ProcessSM, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.b.(gpu.ProcessReader)
	if !ok {
		return nil, errReleased
	}
	return p.ProcessSM(i)
}

// MIGInstances forwards to the backend's gpu.MIGReader.
func (r *Releasable) MIGInstances(i int) ([]gpu.MIGInstance, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m, ok := r.b.(gpu.MIGReader)
	if !ok {
		return nil, errReleased
	}
	return m.MIGInstances(i)
}

// Close closes the backend for good.
func (r *Releasable) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.b == nil {
		return nil
	}
	b := r.b
	r.b = nil
	return b.Close()
}

// watchReleaseSignals releases r on SIGUSR1 and re-acquires it on SIGUSR2
// until ctx ends.
func watchReleaseSignals(ctx context.Context, r *Releasable, log *slog.Logger) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-ch:
				handleReleaseSignal(r, sig, log)
			}
		}
	}()
}

// handleReleaseSignal releases (SIGUSR1) or re-acquires (SIGUSR2) r.
func handleReleaseSignal(r *Releasable, sig os.Signal, log *slog.Logger) {
	if sig == syscall.SIGUSR1 {
		if err := r.Release(); err != nil {
			log.Error("releasing NVML (SIGUSR1)", "err", err)
			return
		}
		log.Warn("NVML released (SIGUSR1) for a driver upgrade: no GPU is measured, active runs get a gap, until SIGUSR2")
		return
	}
	if err := r.Reacquire(); err != nil {
		log.Error("re-acquiring NVML (SIGUSR2); send SIGUSR2 again once the driver is loaded", "err", err)
		return
	}
	log.Info("NVML re-acquired (SIGUSR2): measuring again")
}

// openMainBackend opens Main's backend: NVML's is releasable on SIGUSR1
// and SIGUSR2 until ctx ends (the simulator holds no driver).
func openMainBackend(ctx context.Context, c BackendConfig, log *slog.Logger) (gpu.Backend, func(), error) {
	if c.Kind != BackendNVML {
		return OpenBackend(ctx, c, log)
	}
	r, err := NewReleasable(func() (gpu.Backend, error) {
		b, _, err := OpenBackend(ctx, c, log) // NVML's stop has nothing to stop
		return b, err
	})
	if err != nil {
		return nil, nil, err
	}
	watchReleaseSignals(ctx, r, log)
	return r, func() {}, nil
}
