package demo

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/joulemark/joulemark/internal/remotewrite"
)

// sampleStrings renders samples as sorted "name{labels} value" lines.
func sampleStrings(ss []remotewrite.Sample) []string {
	var out []string
	for _, s := range ss {
		var keys []string
		for k := range s.Labels {
			if k != "__name__" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var lb []string
		for _, k := range keys {
			lb = append(lb, fmt.Sprintf("%s=%q", k, s.Labels[k]))
		}
		out = append(out, fmt.Sprintf("%s{%s} %g @%d", s.Labels["__name__"], strings.Join(lb, ","), s.Value, s.TimestampMs))
	}
	sort.Strings(out)
	return out
}

func TestFamilySamplesAsScraped(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:generation_tokens_total", Help: "h"}, []string{"model_name"})
	c.WithLabelValues("m").Add(42)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulemark_sim_engine_state", Help: "h"})
	g.Set(2)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ttft_seconds", Help: "h", Buckets: []float64{0.1, 1}})
	h.Observe(0.05)
	h.Observe(0.5)
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "lat_seconds", Help: "h", Objectives: map[float64]float64{0.5: 0.05}})
	s.Observe(2)
	reg.MustRegister(c, g, h, s)

	mfs, err := labelGatherer{reg, map[string]string{"node": "demo"}}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []remotewrite.Sample
	for _, mf := range mfs {
		got = append(got, familySamples(mf, map[string]string{"job": "j", "instance": "i:1"}, 1000)...)
	}
	want := []string{
		`joulemark_sim_engine_state{instance="i:1",job="j",node="demo"} 2 @1000`,
		`lat_seconds_count{instance="i:1",job="j",node="demo"} 1 @1000`,
		`lat_seconds_sum{instance="i:1",job="j",node="demo"} 2 @1000`,
		`lat_seconds{instance="i:1",job="j",node="demo",quantile="0.5"} 2 @1000`,
		`ttft_seconds_bucket{instance="i:1",job="j",le="+Inf",node="demo"} 2 @1000`,
		`ttft_seconds_bucket{instance="i:1",job="j",le="0.1",node="demo"} 1 @1000`,
		`ttft_seconds_bucket{instance="i:1",job="j",le="1",node="demo"} 2 @1000`,
		`ttft_seconds_count{instance="i:1",job="j",node="demo"} 2 @1000`,
		`ttft_seconds_sum{instance="i:1",job="j",node="demo"} 0.55 @1000`,
		`vllm:generation_tokens_total{instance="i:1",job="j",model_name="m",node="demo"} 42 @1000`,
	}
	gs := sampleStrings(got)
	if strings.Join(gs, "\n") != strings.Join(want, "\n") {
		t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(gs, "\n"), strings.Join(want, "\n"))
	}
}

func TestLabelGathererKeepsExistingLabel(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x", Help: "h"}, []string{"node"})
	g.WithLabelValues("gpu-node-1").Set(1)
	reg.MustRegister(g)
	mfs, err := labelGatherer{reg, map[string]string{"node": "demo"}}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if l := mfs[0].GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetValue() != "gpu-node-1" {
		t.Errorf("labels %v: the target's own node label must win", l)
	}
}

func TestProbeRemoteWrite(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		wantErr string
	}{
		{"accepted", http.StatusNoContent, ""},
		{"receiver off", http.StatusNotFound, "--web.enable-remote-write-receiver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *http.Request
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			err := probeRemoteWrite(context.Background(), srv.URL+"/api/v1/write", "r1")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if got == nil || got.Header.Get("Content-Encoding") != "snappy" || got.Method != http.MethodPost {
				t.Errorf("request %+v", got)
			}
		})
	}
	if err := probeRemoteWrite(context.Background(), "http://127.0.0.1:1/api/v1/write", "r1"); err == nil {
		t.Error("probe of a closed port: no error")
	}
}

func TestPusherFlushesOnClose(t *testing.T) {
	got := make(chan int, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- int(r.ContentLength)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL, FlushInterval: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "x", Help: "h"}))
	p := startPusher(w, time.Hour, discardLogger(), pushTarget{job: "j", instance: "i", g: reg})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := p.close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Two pushes (start and close) of x and up.
	if st.Acknowledged != 4 || st.Lost() != 0 {
		t.Errorf("stats %+v, want 4 samples acknowledged", st)
	}
	if len(got) == 0 {
		t.Error("nothing reached the server")
	}
}
