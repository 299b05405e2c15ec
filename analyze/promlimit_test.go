package analyze

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/remoteread"
)

// TestPrometheusAnswerCapped: an answer over the limit is an error naming
// the query and the limit, whether its length is declared or streamed
// (issue 33 medium 7: a 150 MB answer was buffered whole).
func TestPrometheusAnswerCapped(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			var b strings.Builder
			b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
			for i := range 20000 {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"metric":{"run_id":"r","phase":"formal","n":"%d"},"value":[1700000000,"1"]}`, i)
			}
			b.WriteString(`]}}`)
			if !streamed {
				w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
				w.Write([]byte(b.String()))
				return
			}
			for s := b.String(); s != ""; {
				n := min(len(s), 64<<10)
				w.Write([]byte(s[:n]))
				w.(http.Flusher).Flush()
				s = s[n:]
			}
		}))
		cfg := Config{PrometheusURL: srv.URL, RunID: "r", ReadAPI: remoteread.Query, Now: time.Unix(1700000000, 0), maxResponse: 256 << 10}
		_, err := loadChecked(context.Background(), cfg)
		srv.Close()
		if !errors.Is(err, errResponseTooLarge) || !strings.Contains(err.Error(), "query ") || !strings.Contains(err.Error(), "MiB") {
			t.Errorf("streamed %v: Load = %v; want the query named and the limit", streamed, err)
		}
	}
}
