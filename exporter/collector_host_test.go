package exporter

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/powercap"
)

func hostTree() fstest.MapFS {
	f := fstest.MapFS{}
	for _, z := range []struct{ id, name, maxUJ string }{
		{"intel-rapl:0", "package-0", "1000000000"},
		{"intel-rapl:0:0", "dram", "1000000000"},
	} {
		f[z.id+"/name"] = &fstest.MapFile{Data: []byte(z.name + "\n")}
		f[z.id+"/max_energy_range_uj"] = &fstest.MapFile{Data: []byte(z.maxUJ + "\n")}
		f[z.id+"/energy_uj"] = &fstest.MapFile{Data: []byte("0\n")}
	}
	return f
}

func setUJ(f fstest.MapFS, id, v string) {
	f[id+"/energy_uj"] = &fstest.MapFile{Data: []byte(v + "\n")}
}

// TestHostEnergyPerPhase meters a fake powercap tree through a run: the
// package counter wraps during the formal phase, and each phase's host
// energy is the counter difference at its boundaries.
func TestHostEnergyPerPhase(t *testing.T) {
	tree := hostTree()
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 1}, Config{Host: powercap.NewMeter(tree)})
	setUJ(tree, "intel-rapl:0", "100000000") // 100 J before the run
	h.post("r", contract.Idle)
	h.step(time.Second)
	setUJ(tree, "intel-rapl:0", "150000000") // idle: 50 J
	setUJ(tree, "intel-rapl:0:0", "5000000") // dram idle: 5 J
	h.post("r", contract.Formal)
	h.step(time.Second)
	setUJ(tree, "intel-rapl:0", "900000000")
	h.exp.cfg.Host.Sample()
	setUJ(tree, "intel-rapl:0", "20000000") // wrapped at 1000 J: formal 850+20 = 870 J
	setUJ(tree, "intel-rapl:0:0", "25000000")
	h.exp.cfg.Host.Sample()
	if err := testutil.GatherAndCompare(h.exp.Gatherer(), strings.NewReader(`
# HELP joulemark_phase_host_energy_joules Host energy (one RAPL powercap zone) over the exact phase, read at its boundaries (up to the latest sample while the phase runs); absent where the zone is unreadable.
# TYPE joulemark_phase_host_energy_joules gauge
joulemark_phase_host_energy_joules{domain="dram",phase="formal",run_id="r",zone="intel-rapl:0:0"} 20
joulemark_phase_host_energy_joules{domain="dram",phase="idle",run_id="r",zone="intel-rapl:0:0"} 5
joulemark_phase_host_energy_joules{domain="package-0",phase="formal",run_id="r",zone="intel-rapl:0"} 870
joulemark_phase_host_energy_joules{domain="package-0",phase="idle",run_id="r",zone="intel-rapl:0"} 50
`), contract.PhaseHostEnergy); err != nil {
		t.Errorf("live run: %v", err)
	}
	h.post("r", contract.Release)
	setUJ(tree, "intel-rapl:0", "30000000")
	if _, err := h.client.EndRun(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second) // resolves the GPU boundaries: the run freezes
	if err := testutil.GatherAndCompare(h.exp.Gatherer(), strings.NewReader(`
# HELP joulemark_host_energy_joules_total Host energy of one RAPL powercap zone counted by the exporter (continued across restarts from --storage.path; counter wraparound at max_energy_range_uj bridged). Absent while the zone is unreadable.
# TYPE joulemark_host_energy_joules_total counter
joulemark_host_energy_joules_total{domain="dram",zone="intel-rapl:0:0"} 25
joulemark_host_energy_joules_total{domain="package-0",zone="intel-rapl:0"} 1030
# HELP joulemark_host_energy_up 1 when the RAPL zone's energy counter was read at the last sample, else 0.
# TYPE joulemark_host_energy_up gauge
joulemark_host_energy_up{domain="dram",zone="intel-rapl:0:0"} 1
joulemark_host_energy_up{domain="package-0",zone="intel-rapl:0"} 1
# HELP joulemark_host_energy_wraps_total Times the zone's energy counter wrapped at max_energy_range_uj and was bridged.
# TYPE joulemark_host_energy_wraps_total counter
joulemark_host_energy_wraps_total{domain="dram",zone="intel-rapl:0:0"} 0
joulemark_host_energy_wraps_total{domain="package-0",zone="intel-rapl:0"} 1
# HELP joulemark_phase_host_energy_joules Host energy (one RAPL powercap zone) over the exact phase, read at its boundaries (up to the latest sample while the phase runs); absent where the zone is unreadable.
# TYPE joulemark_phase_host_energy_joules gauge
joulemark_phase_host_energy_joules{domain="dram",phase="formal",run_id="r",zone="intel-rapl:0:0"} 20
joulemark_phase_host_energy_joules{domain="dram",phase="idle",run_id="r",zone="intel-rapl:0:0"} 5
joulemark_phase_host_energy_joules{domain="dram",phase="release",run_id="r",zone="intel-rapl:0:0"} 0
joulemark_phase_host_energy_joules{domain="package-0",phase="formal",run_id="r",zone="intel-rapl:0"} 870
joulemark_phase_host_energy_joules{domain="package-0",phase="idle",run_id="r",zone="intel-rapl:0"} 50
joulemark_phase_host_energy_joules{domain="package-0",phase="release",run_id="r",zone="intel-rapl:0"} 10
`), "joulemark_host_energy_joules_total", "joulemark_host_energy_up", "joulemark_host_energy_wraps_total", contract.PhaseHostEnergy,
		"joulemark_host_energy_unavailable"); err != nil {
		t.Errorf("finished run: %v", err)
	}
	h.exp.mu.RLock()
	frozen := h.exp.lc.runs["r"].frozen != nil
	h.exp.mu.RUnlock()
	if !frozen {
		t.Error("the ended run was not frozen: the frozen path went untested")
	}
}

// deniedTree answers permission denied for energy_uj, as the kernel does
// for non-root readers since 2020.
type deniedTree struct{ fstest.MapFS }

func (d deniedTree) Open(name string) (fs.File, error) {
	if path.Base(name) == "energy_uj" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.MapFS.Open(name)
}

func TestHostEnergyUnavailableSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tree   fs.FS
		reason string
		up     string
	}{
		{"permission denied", struct{ fs.FS }{deniedTree{hostTree()}}, powercap.ReasonPermissionDenied, `
# HELP joulemark_host_energy_up 1 when the RAPL zone's energy counter was read at the last sample, else 0.
# TYPE joulemark_host_energy_up gauge
joulemark_host_energy_up{domain="dram",zone="intel-rapl:0:0"} 0
joulemark_host_energy_up{domain="package-0",zone="intel-rapl:0"} 0
`},
		{"no RAPL", fstest.MapFS{}, powercap.ReasonNoRAPL, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 1}, Config{Host: powercap.NewMeter(tc.tree)})
			h.post("r", contract.Idle)
			h.step(time.Second)
			h.post("r", contract.Formal)
			want := `
# HELP joulemark_host_energy_unavailable 1 when no RAPL zone is readable, with the reason (no_rapl, permission_denied, read_error); absent when host energy is measured.
# TYPE joulemark_host_energy_unavailable gauge
joulemark_host_energy_unavailable{reason="` + tc.reason + `"} 1
` + tc.up
			// no energy series at all: unreadable is never exported as 0
			if err := testutil.GatherAndCompare(h.exp.Gatherer(), strings.NewReader(want),
				"joulemark_host_energy_unavailable", "joulemark_host_energy_up", "joulemark_host_energy_joules_total", contract.PhaseHostEnergy); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRestartContinuesHostEnergy: an exporter restarted on its storage
// after a graceful shutdown (a clean save) continues the RAPL zones'
// counters from the save, like the GPUs' energy counters; after an unclean
// one (the periodic save, then a crash) they start again from 0, never
// from a base older than the last value served. Either way a restored
// run's host energy goes on: the idle phase's is kept, the formal phase's
// is the energy up to the save plus the energy after the restart (the
// downtime counts nothing). A zone unreadable at the save starts again from
// 0: the phase running across the restart has no host energy for it; the
// ended idle phase keeps its own.
func TestRestartContinuesHostEnergy(t *testing.T) {
	phases := `
joulemark_phase_host_energy_joules{domain="dram",phase="formal",run_id="r",zone="intel-rapl:0:0"} 23
joulemark_phase_host_energy_joules{domain="dram",phase="idle",run_id="r",zone="intel-rapl:0:0"} 5
joulemark_phase_host_energy_joules{domain="package-0",phase="formal",run_id="r",zone="intel-rapl:0"} 250
joulemark_phase_host_energy_joules{domain="package-0",phase="idle",run_id="r",zone="intel-rapl:0"} 50
`
	phasesNoDRAM := `
joulemark_phase_host_energy_joules{domain="dram",phase="idle",run_id="r",zone="intel-rapl:0:0"} 5
joulemark_phase_host_energy_joules{domain="package-0",phase="formal",run_id="r",zone="intel-rapl:0"} 250
joulemark_phase_host_energy_joules{domain="package-0",phase="idle",run_id="r",zone="intel-rapl:0"} 50
`
	for _, tc := range []struct {
		name         string
		dramAtSave   bool // the DRAM zone readable at the save
		clean        bool // the save of a graceful shutdown
		wantRestored string
	}{
		{"every zone readable, clean", true, true, `
joulemark_host_energy_joules_total{domain="dram",zone="intel-rapl:0:0"} 28
joulemark_host_energy_joules_total{domain="package-0",zone="intel-rapl:0"} 400` + phases},
		{"every zone readable, unclean", true, false, `
joulemark_host_energy_joules_total{domain="dram",zone="intel-rapl:0:0"} 3
joulemark_host_energy_joules_total{domain="package-0",zone="intel-rapl:0"} 100` + phases},
		{"DRAM unreadable at the save, clean", false, true, `
joulemark_host_energy_joules_total{domain="dram",zone="intel-rapl:0:0"} 3
joulemark_host_energy_joules_total{domain="package-0",zone="intel-rapl:0"} 400` + phasesNoDRAM},
		{"DRAM unreadable at the save, unclean", false, false, `
joulemark_host_energy_joules_total{domain="dram",zone="intel-rapl:0:0"} 3
joulemark_host_energy_joules_total{domain="package-0",zone="intel-rapl:0"} 100` + phasesNoDRAM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			simCfg := gpu.SimConfig{GPUs: 1, Seed: 1}
			tree := hostTree()
			h := newHarness(t, simCfg, Config{StoragePath: dir, Host: powercap.NewMeter(tree)})
			setUJ(tree, "intel-rapl:0", "100000000")
			h.exp.cfg.Host.Sample()
			h.post("r", contract.Idle)
			h.step(time.Second)
			setUJ(tree, "intel-rapl:0", "150000000") // idle: 50 J
			setUJ(tree, "intel-rapl:0:0", "5000000") // dram idle: 5 J
			h.post("r", contract.Formal)
			h.step(time.Second)
			setUJ(tree, "intel-rapl:0", "300000000")  // formal up to the save: 150 J
			setUJ(tree, "intel-rapl:0:0", "25000000") // dram: 20 J
			if !tc.dramAtSave {
				delete(tree, "intel-rapl:0:0/energy_uj")
			}
			h.exp.cfg.Host.Sample()
			h.exp.save(tc.clean)
			setUJ(tree, "intel-rapl:0", "350000000") // measured, never saved: lost with the crash
			h.exp.cfg.Host.Sample()
			h.exp.Close()

			setUJ(tree, "intel-rapl:0", "400000000") // the downtime: not counted
			setUJ(tree, "intel-rapl:0:0", "30000000")
			h.clk.Advance(5 * time.Second)
			h2 := newHarnessOn(t, h.clk, simCfg, Config{StoragePath: dir, Host: powercap.NewMeter(tree)})
			setUJ(tree, "intel-rapl:0", "500000000")  // formal after the restart: 100 J
			setUJ(tree, "intel-rapl:0:0", "33000000") // dram: 3 J
			h2.exp.cfg.Host.Sample()
			if err := testutil.GatherAndCompare(h2.exp.Gatherer(), strings.NewReader(`
# HELP joulemark_host_energy_joules_total Host energy of one RAPL powercap zone counted by the exporter (continued across restarts from --storage.path; counter wraparound at max_energy_range_uj bridged). Absent while the zone is unreadable.
# TYPE joulemark_host_energy_joules_total counter
# HELP joulemark_phase_host_energy_joules Host energy (one RAPL powercap zone) over the exact phase, read at its boundaries (up to the latest sample while the phase runs); absent where the zone is unreadable.
# TYPE joulemark_phase_host_energy_joules gauge
`+strings.TrimPrefix(tc.wantRestored, "\n")), "joulemark_host_energy_joules_total", contract.PhaseHostEnergy); err != nil {
				t.Error(err)
			}
		})
	}
}

// countingFS counts the reads of the zones' energy_uj files.
type countingFS struct {
	fs.FS
	reads atomic.Int64
}

func (c *countingFS) Open(name string) (fs.File, error) {
	if path.Base(name) == "energy_uj" {
		c.reads.Add(1)
	}
	return c.FS.Open(name)
}

// TestHostReadOnTheSamplingTick: a started exporter reads the host's RAPL
// zones on the sampling loop's tick, with no loop of its own: the zones'
// counters are read over and over while nothing else asks for them.
func TestHostReadOnTheSamplingTick(t *testing.T) {
	tree := &countingFS{FS: hostTree()}
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond, Host: powercap.NewMeter(tree)})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t.Context())
	defer e.Close()
	before := tree.reads.Load()
	waitFor(t, "20 ticks' reads of the 2 zones", func() bool { return tree.reads.Load() >= before+2*20 })
}
