package exporter

import (
	"math"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// driverVersion reports another driver version for every GPU, as after
// an in-place driver upgrade.
type driverVersion struct {
	gpu.Backend
	version string
}

func (d driverVersion) Devices() []gpu.Device {
	devs := d.Backend.Devices()
	for i := range devs {
		devs[i].DriverVersion = d.version
	}
	return devs
}

// TestRestartBridgeGuards: after a crash, the GPU's own counter advance
// bridges the downtime only within the same boot, with the same driver,
// and when the advance is no more than the power limit over the downtime;
// otherwise the counter starts again from 0 (a reset) and the run's gap
// counts no energy. A reboot or driver reload whose new counter is by
// chance past the saved value must not be bridged with a wrong energy.
func TestRestartBridgeGuards(t *testing.T) {
	for _, tc := range []struct {
		name    string
		boot2   string
		driver2 string
		jumpJ   float64 // added to the raw counter during the downtime
		bridged bool
	}{
		{"same boot and driver", "boot-a", "", 0, true},
		{"node rebooted", "boot-b", "", 0, false},
		{"driver upgraded", "boot-a", "sim-2", 0, false},
		{"advance beyond the power limit", "boot-a", "", 1e7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 3, NoiseWatts: 0.5, EnergyCounter: true, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			oc := &offsetCounter{sim, 1e6}
			dir := t.TempDir()
			step := func(e *Exporter, d time.Duration) {
				for range int(d / (100 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
					e.SampleOnce()
					e.SampleSlowOnce()
				}
			}
			e1, err := newExp(Config{Backend: keepOpen{oc}, Clock: clk, StoragePath: dir, APIToken: testToken, BootID: "boot-a"})
			if err != nil {
				t.Fatal(err)
			}
			doc := saveRunR(t, e1, false, step)
			if doc.BootID != "boot-a" || doc.GPUs[0].DriverVersion != "sim" || doc.GPUs[0].PowerLimitWatts <= 0 {
				t.Fatalf("saved boot %q, GPU 0 %+v: want the boot ID, driver version and power limit", doc.BootID, doc.GPUs[0])
			}
			clk.Advance(5 * time.Second)
			oc.off += tc.jumpJ
			var b gpu.Backend = keepOpen{oc}
			if tc.driver2 != "" {
				b = driverVersion{b, tc.driver2}
			}
			rec := &firstRaw{Backend: b}
			e2, err := newExp(Config{Backend: rec, Clock: clk, StoragePath: dir, APIToken: testToken, BootID: tc.boot2})
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			e2.SampleOnce()
			got := gatheredEnergy(t, e2)
			want := 0.0
			if tc.bridged {
				want = doc.GPUs[0].EnergyJoules + *rec.raw - *doc.GPUs[0].RawCounterJoules
			}
			if math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Errorf("counter %.3f J after the restart, want %.3f J (bridged: %v)", got, want, tc.bridged)
			}
			st, _ := e2.RunStatus("r")
			if n := len(st.Gaps[0].EnergyBridgedGPUs); (n > 0) != tc.bridged {
				t.Errorf("gap's bridged GPUs %v, want bridged %v", st.Gaps[0].EnergyBridgedGPUs, tc.bridged)
			}
		})
	}
}
