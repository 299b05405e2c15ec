package clientflags

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// PhaseClients sends the token as a bearer token, or in X-Joulemark-Token
// when the HTTP config authenticates (basic auth); Authenticated is false
// without either.
func TestPhaseClients(t *testing.T) {
	type seen struct{ auth, token string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get(phaseapi.TokenHeader)}
		http.Error(w, `{"error":"no"}`, http.StatusNotFound)
	}))
	defer srv.Close()
	dir := t.TempDir()
	tokenFile := write(t, dir, "token", "s3cret\n")
	basic := write(t, dir, "http.yml", "basic_auth:\n  username: u\n  password: p\n")
	t.Setenv(TokenEnv, "")
	for _, tc := range []struct {
		args       []string
		want       seen
		authorized bool
	}{
		{[]string{"--exporter.bearer-token-file", tokenFile}, seen{"Bearer s3cret", ""}, true},
		{[]string{"--exporter.bearer-token-file", tokenFile, "--exporter.http-config-file", basic}, seen{"Basic dTpw", "s3cret"}, true},
		{nil, seen{}, false},
	} {
		pc, err := parse(t, tc.args...).Exporter.PhaseClients("test", 5*time.Second)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if pc.Authenticated != tc.authorized {
			t.Errorf("%v: Authenticated %v", tc.args, pc.Authenticated)
		}
		c, err := pc.Client(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EndRun(context.Background(), "r1"); err == nil {
			t.Fatalf("%v: the 404 was not an error", tc.args)
		}
		if s := <-got; s != tc.want {
			t.Errorf("%v: sent %+v, want %+v", tc.args, s, tc.want)
		}
	}
}
