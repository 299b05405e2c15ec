package gpu

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/joulemark/joulemark/internal/fakeclock"
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
