package realprom

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/remotewrite"
)

// TestRemoteWriteOutOfOrderRoundTrip writes per-request style samples with
// past, out-of-order timestamps to a real Prometheus and reads them back.
func TestRemoteWriteOutOfOrderRoundTrip(t *testing.T) {
	srv := Start(t, "")
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write", FlushInterval: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-20 * time.Minute).Truncate(time.Second)
	// Slot 0 gets a later sample first, then an earlier one: out of order.
	for _, s := range []struct {
		slot string
		off  time.Duration
		v    float64
	}{{"0", 2 * time.Minute, 7}, {"1", time.Minute, 5}, {"0", 30 * time.Second, 3}} {
		w.Append(remotewrite.Sample{Labels: map[string]string{"__name__": "joulemark_request_output_tokens", "run_id": "rp", "phase": "formal", "slot": s.slot},
			Value: s.v, TimestampMs: base.Add(s.off).UnixMilli()})
	}
	if st, err := w.Close(context.Background()); err != nil || st.Acknowledged != 3 {
		t.Fatalf("remote write: %+v %v\n%s", st, err, srv.Log())
	}
	client, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	val, _, _, err := v1.NewAPI(client).Query(ctx, `sum(sum_over_time(joulemark_request_output_tokens{run_id="rp"}[10m]))`, base.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	vec, ok := val.(model.Vector)
	if !ok || len(vec) != 1 || vec[0].Value != 15 {
		t.Fatalf("sum of written samples = %v, want 15", val)
	}
}
