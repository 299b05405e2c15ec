package gpu

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
)

func TestSimCoupler(t *testing.T) {
	var mu sync.Mutex
	body := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	set := func(s string) { mu.Lock(); body = s; mu.Unlock() }

	clk := fakeclock.New()
	sim, _ := NewSim(SimConfig{GPUs: 2, Clock: clk})
	c, err := NewSimCoupler(sim, srv.URL+"/", 100_000_000)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		exposition string
		state      EngineState
		loads      [2]float64
		wantErr    bool
	}{
		{"loading", "# TYPE joulemark_sim_engine_state gauge\njoulemark_sim_engine_state 1\n", EngineLoading, [2]float64{0, 0}, false},
		{"running all", "# TYPE joulemark_sim_engine_state gauge\njoulemark_sim_engine_state 2\n# TYPE joulemark_sim_engine_load_ratio gauge\njoulemark_sim_engine_load_ratio 0.75\n", EngineRunning, [2]float64{0.75, 0.75}, false},
		{"per gpu", "joulemark_sim_engine_state 2\njoulemark_sim_engine_load_ratio{gpu=\"1\"} 0.25\n", EngineRunning, [2]float64{0.75, 0.25}, false},
		{"no state gauge", "other_metric 1\n", EngineStopped, [2]float64{0.75, 0.25}, true},
		{"garbage", "{{{ not metrics", EngineStopped, [2]float64{0.75, 0.25}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set(tc.exposition)
			err := c.Poll(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Poll: %v, want error %v", err, tc.wantErr)
			}
			if got := sim.EngineState(); got != tc.state {
				t.Errorf("state %v, want %v", got, tc.state)
			}
			for i, want := range tc.loads {
				if got := sim.gpus[i].load; got != want {
					t.Errorf("gpu %d load %v, want %v", i, got, want)
				}
			}
		})
	}
	srv.Close()
	sim.SetEngineState(EngineRunning)
	if err := c.Poll(ctx); err == nil || sim.EngineState() != EngineStopped {
		t.Errorf("unreachable engine: err %v, state %v; want an error and stopped", err, sim.EngineState())
	}
	if _, err := NewSimCoupler(sim, "localhost:1234", 1); err == nil {
		t.Error("URL without scheme accepted")
	}
}

// TestSimCouplersPerPod: two engines, each coupled to the GPUs its pod
// holds, move only those: one loading while the other runs, and the
// unreachable one stops its own GPUs only.
func TestSimCouplersPerPod(t *testing.T) {
	serve := func(body string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
	}
	a := serve("joulemark_sim_engine_state 2\njoulemark_sim_engine_load_ratio 1\n")
	defer a.Close()
	b := serve("joulemark_sim_engine_state 1\n")
	clk := fakeclock.New()
	sim, _ := NewSim(SimConfig{GPUs: 3, Clock: clk})
	ca, _ := NewSimCoupler(sim, a.URL, 100_000_000)
	cb, _ := NewSimCoupler(sim, b.URL, 100_000_000)
	if err := ca.SetGPUs([]int{0}); err != nil {
		t.Fatal(err)
	}
	if err := cb.SetGPUs([]int{1}); err != nil {
		t.Fatal(err)
	}
	if err := cb.SetGPUs([]int{5}); err == nil {
		t.Error("GPU 5 of 3 accepted")
	}
	ctx := context.Background()
	if err := ca.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cb.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(60_000_000_000)
	p := func(i int) float64 { return sim.PowerAt(i, clk.Now()) }
	if p(0) < 600 || p(1) < 200 || p(1) > 300 || p(2) > 80 {
		t.Errorf("power %.0f %.0f %.0f W: want GPU 0 at full load, GPU 1 loading (~250 W), GPU 2 idle", p(0), p(1), p(2))
	}
	b.Close()
	if err := cb.Poll(ctx); err == nil {
		t.Error("unreachable engine: no error")
	}
	clk.Advance(60_000_000_000)
	if p(0) < 600 || p(1) > 80 {
		t.Errorf("after engine b died: %.0f %.0f W, want GPU 0 still loaded, GPU 1 idle", p(0), p(1))
	}
}

// TestSimPowerShape: on the default engine's step times, power rises with
// the batch and saturates, prefill draws more than a large decode batch,
// and J/token falls steeply up to a batch of 32 and slowly after it.
func TestSimPowerShape(t *testing.T) {
	p := DefaultSimPower()
	step := func(b int) time.Duration { return 15*time.Millisecond + time.Duration(b)*100*time.Microsecond }
	jPerToken := func(b int) float64 {
		return (p.IdleWatts + p.Watts(0, b, step(b))) * step(b).Seconds() / float64(b)
	}
	prev := 0.0
	for _, b := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256} {
		w := p.Watts(0, b, step(b))
		if w <= prev || p.Load(0, b, step(b)) >= 1 {
			t.Errorf("batch %d: %.0f W above idle (previous %.0f), load %.2f: want rising, below max", b, w, prev, p.Load(0, b, step(b)))
		}
		prev = w
	}
	if r := jPerToken(1) / jPerToken(32); r < 5 {
		t.Errorf("J/token batch 1 over batch 32: %.1f, want a steep fall (> 5)", r)
	}
	if r := jPerToken(32) / jPerToken(256); r > 3 {
		t.Errorf("J/token batch 32 over batch 256: %.1f, want a flatter fall (< 3)", r)
	}
	if pre, dec := p.Watts(8192, 0, 8192*50*time.Microsecond), p.Watts(0, 256, step(256)); pre <= dec {
		t.Errorf("prefill %.0f W, decode at 256 %.0f W: want prefill above", pre, dec)
	}
}
