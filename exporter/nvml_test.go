//go:build cgo

package exporter

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/nvmlmock"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// mockNVML is a DGX H100 from go-nvml's mock whose power and energy the
// test sets: each GPU draws watts[i]; its energy counter advances by
// watts·dt on every step.
type mockNVML struct {
	mu      sync.Mutex
	watts   [8]float64
	counter [8]uint64 // mJ
	lost    [8]bool
	srv     *server.Server
}

func newMockNVML() *mockNVML {
	m := &mockNVML{srv: nvmlmock.New()}
	for i := range m.srv.Devices {
		dev := nvmlmock.Device(m.srv, i)
		m.watts[i] = 70 + float64(i)
		m.counter[i] = 1_000_000_000 + uint64(i)*1000
		dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.lost[i] {
				return nvml.ERROR_GPU_IS_LOST
			}
			for k := range fv {
				switch fv[k].FieldId {
				case nvml.FI_DEV_POWER_INSTANT, nvml.FI_DEV_POWER_AVERAGE:
					nvmlmock.SetField(&fv[k], nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_INT, uint64(m.watts[i]*1000))
				case nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION:
					nvmlmock.SetField(&fv[k], nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, m.counter[i])
				}
			}
			return nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	}
	return m
}

func (m *mockNVML) advance(dt time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.watts {
		m.counter[i] += uint64(m.watts[i] * dt.Seconds() * 1000)
	}
}

func (m *mockNVML) set(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// mockScenario runs a whole lifecycle on the mock NVML backend, with a
// counter reset on GPU 6 and GPU 7 lost at the end.
func mockScenario(t testing.TB) *Exporter {
	clk := newFakeClock()
	m := newMockNVML()
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: b, Clock: clk, APIToken: testToken, ReleaseHold: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration) {
		for n := int(d / e.cfg.Interval); n > 0; n-- {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	post := func(p contract.Phase) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, _, err := e.lc.StartPhase("golden-run", p, e.off(clk.Now()), nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.SampleOnce()
	e.SampleSlowOnce()
	post(contract.Idle)
	step(5 * time.Second)
	post(contract.Startup)
	m.set(func() {
		for i := range m.watts {
			m.watts[i] = 250
		}
	})
	step(5 * time.Second)
	post(contract.Warmup)
	step(2 * time.Second)
	post(contract.Formal)
	m.set(func() {
		for i := range m.watts {
			m.watts[i] = 600
		}
	})
	step(10 * time.Second)
	m.set(func() { m.counter[6] = 5000 }) // driver reload: the counter restarts
	step(time.Second)
	post(contract.Release)
	m.set(func() {
		for i := range m.watts {
			m.watts[i] = 70 + float64(i)
		}
	})
	step(4 * time.Second) // closes after the 2 s hold
	e.SampleSlowOnce()
	m.set(func() { m.lost[7] = true })
	step(time.Second)
	return e
}

func TestMetricsGolden(t *testing.T) {
	e := mockScenario(t)
	defer e.Close()
	path := filepath.Join("testdata", "metrics.prom")
	if golden.Update() {
		rec := fetchMetricsHandler(t, e)
		var keep []string
		for _, l := range strings.SplitAfter(rec, "\n") {
			if strings.Contains(l, sampleDurationMetric) {
				continue // real call times: not reproducible
			}
			if strings.Contains(l, "joulemark_gpu_") || strings.Contains(l, "joulemark_phase_") || strings.Contains(l, "joulemark_run_") || strings.Contains(l, "joulemark_sampler_") {
				keep = append(keep, l)
			}
		}
		if err := os.WriteFile(path, []byte(strings.Join(keep, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(withoutFamily(e.Gatherer(), sampleDurationMetric), f); err != nil {
		t.Error(err)
	}
	// the scenario shows what it claims
	st, _ := e.RunStatus("golden-run")
	if st.Release.State != phaseapi.ReleaseClosed {
		t.Errorf("release %+v, want closed", st.Release)
	}
	for _, want := range []string{
		`joulemark_gpu_up{gpu="7",uuid="GPU-00000000-0000-4000-8000-000000000007"} 0`,
		`joulemark_gpu_energy_resets_total{gpu="6",uuid="GPU-00000000-0000-4000-8000-000000000006"} 1`,
		`joulemark_sampler_errors_total{gpu="7",reason="read",uuid="GPU-00000000-0000-4000-8000-000000000007"} 10`,
	} {
		if !strings.Contains(fetchMetricsHandler(t, e), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

const sampleDurationMetric = "joulemark_gpu_sample_duration_seconds"

// withoutFamily gathers g without the family name.
func withoutFamily(g prometheus.Gatherer, name string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		return slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == name }), err
	})
}

func TestMetricsPassPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	e := mockScenario(t)
	defer e.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(fetchMetricsHandler(t, e))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func BenchmarkSampleTick8GPUsMockNVML(b *testing.B) {
	clk := newFakeClock()
	m := newMockNVML()
	nv, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	benchTick(b, nv, clk, m.advance)
}
