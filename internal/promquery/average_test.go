package promquery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// TestAverageOver: the carbon query is averaged over the span; no series
// is no figure, two series an error.
func TestAverageOver(t *testing.T) {
	var series int
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = r.Form.Get("query")
		res := []string{}
		for i := range series {
			res = append(res, fmt.Sprintf(`{"metric":{"zone":"z%d"},"value":[1000,"%d"]}`, i, 300+i))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(res, ","))
	}))
	defer srv.Close()
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	a := v1.NewAPI(c)
	series = 1
	v, err := AverageOver(context.Background(), a, `grid_intensity{zone="DE"}`, 0, 600)
	if err != nil || v == nil || *v != 300 {
		t.Fatalf("one series: %v, %v", v, err)
	}
	if want := `avg_over_time((grid_intensity{zone="DE"})[10m:6s])`; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
	series = 0
	if v, err := AverageOver(context.Background(), a, "x", 0, 600); v != nil || err != nil {
		t.Errorf("no series: %v, %v", v, err)
	}
	series = 2
	if _, err := AverageOver(context.Background(), a, "x", 0, 600); err == nil || !strings.Contains(err.Error(), "2 series") {
		t.Errorf("two series: %v", err)
	}
}
